"""Withdrawing an episode (SPEC §12): its facts close as withdrawn, what they replaced returns."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from admissions.actions import correct_fact, record_verdict
from admissions.selectors import fact_status
from memories.store.errors import Forbidden, NotFound, StateConflict
from memories.store.models import AuditEntry, Conflict, Fact, Withdrawal
from memories.write.actions import assert_fact
from memories.write.episodes import PlanChanged, withdraw_episode
from tests.conftest import at, make_user

pytestmark = pytest.mark.django_db

T0 = at("2026-04-01T09:00:00")


def write(actor, subject, predicate, obj, source, now, **extra):
    data = {
        "scope": "project",
        "subject": subject,
        "predicate": predicate,
        "object": obj,
        "source_type": source,
        **extra,
    }
    return assert_fact(actor=actor, data=data, now=now)


@pytest.fixture
def poisoned(scope, member, steward):
    """A store where the episode "run-13" overwrote good facts, and one write came after it."""
    agent = make_user("agent-13")
    scope.members.add(agent)
    hour = timedelta(hours=1)
    facts = {}
    facts["version"] = write(member, "AuthService", "core/has-version", "2.0.0", "code", T0)
    record_verdict(
        actor=steward, fact_id=facts["version"].fact.pk, verdict="admitted", ground="ok", now=T0
    )
    facts["prefers"] = write(member, "team", "core/prefers", "Y", "user-assertion", T0)
    facts["uses"] = write(member, "api", "core/uses", "REST", "session-log", T0)
    facts["db"] = write(member, "db", "core/has-version", "1", "code", T0)

    run = {"episode": "run-13"}
    facts["poison-1"] = write(
        agent, "AuthService", "core/has-version", "6.6.6", "code", T0 + hour, **run
    )
    facts["poison-2"] = write(
        agent, "AuthService", "core/has-version", "6.6.7", "code", T0 + 2 * hour, **run
    )
    facts["avoids"] = write(agent, "team", "core/avoids", "Y", "user-assertion", T0 + hour, **run)
    facts["escalated"] = write(
        agent,
        "api",
        "core/uses",
        "REST",
        "user-assertion",
        T0 + hour,
        epistemic="commitment",
        **run,
    )
    facts["db-2"] = write(agent, "db", "core/has-version", "2", "code", T0 + hour, **run)
    facts["extra"] = write(agent, "cache", "core/uses", "memcached", "code", T0 + hour, **run)
    # After the episode, someone else's weaker write on one of its slots: flagged against it.
    facts["later"] = write(member, "db", "core/has-version", "1.5", "agent-note", T0 + 3 * hour)
    assert facts["later"].reason == "outranked"
    assert {facts[k].status for k in ("poison-1", "poison-2", "avoids", "escalated", "db-2")} == {
        "superseded"
    }
    return facts


def state() -> list:
    """Every row a withdrawal could touch, to prove a dry run touches none."""
    with connection.cursor() as cursor:
        rows = []
        for table in (
            "memories_fact",
            "memories_conflict",
            "memories_conflictmember",
            "memories_auditentry",
            "memories_withdrawal",
        ):
            cursor.execute(f"SELECT * FROM {table} ORDER BY 1")
            rows.append(cursor.fetchall())
        return rows


def confirmed(**kwargs):
    """A withdrawal as every face makes it: the dry run, then its token confirmed."""
    dry = withdraw_episode(**kwargs, dry_run=True)
    return withdraw_episode(**kwargs, confirm=dry.token)


def ids(facts) -> set:
    return {fact.pk for fact in facts}


def test_withdrawal_closes_the_episodes_facts_and_reinstates_what_they_replaced(poisoned, steward):
    later = T0 + timedelta(days=1)
    plan = confirmed(
        actor=steward, scope="project", episode="run-13", reason="poisoned session", now=later
    )
    live_poison = ["poison-2", "avoids", "escalated", "db-2", "extra"]
    assert ids(plan.withdrawn) == {poisoned[k].fact.pk for k in live_poison}
    assert ids(plan.reinstated) == {poisoned[k].fact.pk for k in ("version", "prefers", "uses")}
    for key in live_poison:
        fact = Fact.objects.get(pk=poisoned[key].fact.pk)
        assert (fact.invalidation_kind, fact.t_invalid) == ("withdrawn", later)
        assert fact.invalidation_reason == "poisoned session"
        assert fact.invalidated_by == steward
    # poison-1 was already superseded inside the episode: it stays as it was.
    assert Fact.objects.get(pk=poisoned["poison-1"].fact.pk).invalidation_kind == "superseded"
    for key in ("version", "prefers", "uses"):
        fact = Fact.objects.get(pk=poisoned[key].fact.pk)
        assert fact.is_live and fact.superseded_by_id is None and fact.invalidation_kind == ""
    # Reopened, not copied: the admitted fact keeps its verdict.
    assert fact_status(Fact.objects.get(pk=poisoned["version"].fact.pk)).status == "admitted"

    record = Withdrawal.objects.get()
    assert record.episode == "run-13" and record.actor == steward and record.at == later
    assert {entry["fact"] for entry in record.reinstated} == {str(f.pk) for f in plan.reinstated}
    before = {entry["fact"]: entry["before"] for entry in record.reinstated}
    assert before[str(poisoned["version"].fact.pk)]["invalidation_kind"] == "superseded"
    audit = AuditEntry.objects.filter(at=later)
    assert audit.filter(action="withdrawn").count() == 5
    assert audit.filter(action="reinstated").count() == 3
    assert audit.filter(action="withdrew-episode").count() == 1


def test_reinstatement_never_overrules_what_stands_now(poisoned, steward):
    plan = confirmed(actor=steward, scope="project", episode="run-13", reason="poisoned")
    [kept] = plan.kept_closed
    assert kept.fact.pk == poisoned["db"].fact.pk
    assert str(poisoned["later"].fact.pk) in kept.why
    assert not Fact.objects.get(pk=poisoned["db"].fact.pk).is_live
    # The later write's conflict lost its standing side and closed by itself.
    conflict = Conflict.objects.get(pk=poisoned["later"].conflict.pk)
    assert conflict.resolution == "moot"
    assert conflict.pk in plan.closed_conflicts
    live_db = Fact.objects.live().filter(subject__name="db").with_disputed()
    assert [(f.object_lit, f.disputed) for f in live_db] == [("1.5", False)]


def test_a_dry_run_lists_exactly_what_the_withdrawal_does_and_changes_nothing(poisoned, steward):
    before = state()
    dry = withdraw_episode(
        actor=steward, scope="project", episode="run-13", reason="check", dry_run=True
    )
    assert state() == before
    assert dry.withdrawal is None
    done = withdraw_episode(
        actor=steward, scope="project", episode="run-13", reason="go", confirm=dry.token
    )
    assert ids(dry.withdrawn) == ids(done.withdrawn)
    assert ids(dry.reinstated) == ids(done.reinstated)
    assert ids(k.fact for k in dry.kept_closed) == ids(k.fact for k in done.kept_closed)
    assert dry.closed_conflicts == done.closed_conflicts and done.closed_conflicts


def test_only_a_steward_of_the_scope_withdraws(poisoned, member, outsider, steward):
    with pytest.raises(Forbidden):
        confirmed(actor=member, scope="project", episode="run-13", reason="mine")
    with pytest.raises(NotFound):
        confirmed(actor=outsider, scope="project", episode="run-13", reason="x")
    with pytest.raises(NotFound):
        confirmed(actor=steward, scope="project", episode="run-99", reason="x")
    confirmed(actor=steward, scope="project", episode="run-13", reason="x")
    with pytest.raises(StateConflict):
        confirmed(actor=steward, scope="project", episode="run-13", reason="again")
    assert Withdrawal.objects.count() == 1


def test_the_command_dry_runs_and_withdraws(poisoned, steward):
    out = StringIO()
    call_command(
        "withdraw_episode",
        "run-13",
        "--scope",
        "project",
        "--reason",
        "bad run",
        "--dry-run",
        "--as",
        "stella",
        stdout=out,
    )
    assert "Would withdraw 5 fact(s)" in out.getvalue()
    assert "Dry run: nothing was changed." in out.getvalue()
    token = out.getvalue().split("--confirm ")[1].split()[0]
    assert Withdrawal.objects.count() == 0

    def confirm(token, out):
        command = ["withdraw_episode", "run-13", "--scope", "project", "--reason", "bad run"]
        call_command(*command, "--confirm", token, stdout=out)

    # A write into the episode since the dry run: its token no longer confirms.
    write(poisoned["avoids"].fact.author, "queue", "core/uses", "sqs", "code", T0, episode="run-13")
    out = StringIO()
    with pytest.raises(CommandError, match="changed since its dry run"):
        confirm(token, out)
    assert "Would withdraw 6 fact(s)" in out.getvalue()
    assert Withdrawal.objects.count() == 0

    token = out.getvalue().split("--confirm ")[1].split()[0]
    out = StringIO()
    confirm(token, out)
    assert "Did withdraw 6 fact(s)" in out.getvalue()
    assert Withdrawal.objects.get().actor.username == "claimgraph-shell"


def test_the_command_refuses_a_member(poisoned, member):
    with pytest.raises(CommandError, match="steward"):
        call_command(
            "withdraw_episode",
            "run-13",
            "--scope",
            "project",
            "--reason",
            "x",
            "--as",
            "mira",
            stdout=StringIO(),
        )


def test_a_stewards_correction_is_not_the_episodes_and_is_never_withdrawn(poisoned, steward):
    """Issue 29 §1: correcting an agent's fact never tags the correction with its episode."""
    poison = poisoned["poison-2"].fact
    correction = correct_fact(
        actor=steward,
        fact_id=poison.pk,
        changes={"object": "3.0.0"},
        ground="the release notes say 3.0.0",
        now=T0 + timedelta(hours=4),
    ).replacement
    assert correction.episode == ""
    plan = confirmed(actor=steward, scope="project", episode="run-13", reason="poisoned")
    assert correction.pk not in ids(plan.withdrawn)
    live = Fact.objects.live().filter(
        subject__name="AuthService", predicate__name="core/has-version"
    )
    assert [f.object_lit for f in live] == ["3.0.0"]
    assert poisoned["version"].fact.pk not in ids(plan.reinstated)


def test_a_withdrawal_leaves_a_stewards_write_under_the_episode_for_the_steward(poisoned, steward):
    """Issue 29 §1: a steward's act tagged with the episode is reported, never undone."""
    ruling = write(
        steward, "cache", "core/uses", "redis", "code", T0 + timedelta(hours=4), episode="run-13"
    )
    dry = withdraw_episode(
        actor=steward, scope="project", episode="run-13", reason="check", dry_run=True
    )
    assert ruling.fact.pk not in ids(dry.withdrawn)
    assert [k.fact.pk for k in dry.left_for_steward] == [ruling.fact.pk]
    plan = withdraw_episode(
        actor=steward, scope="project", episode="run-13", reason="poisoned", confirm=dry.token
    )
    assert [k.fact.pk for k in plan.left_for_steward] == [ruling.fact.pk]
    assert Fact.objects.get(pk=ruling.fact.pk).is_live


def test_a_withdrawal_withdraws_exactly_what_its_dry_run_showed_or_nothing(poisoned, steward):
    """Issue 29 §2: the agent writes more after the dry run; the confirmation is refused."""
    agent = poisoned["extra"].fact.author
    kwargs = {"actor": steward, "scope": "project", "episode": "run-13", "reason": "poisoned"}
    dry = withdraw_episode(**kwargs, dry_run=True)
    assert len(dry.withdrawn) == 5
    more = [
        write(agent, f"svc-{n}", "core/uses", "x", "code", T0, episode="run-13").fact
        for n in range(20)
    ]
    before = state()
    with pytest.raises(PlanChanged) as refused:
        withdraw_episode(**kwargs, confirm=dry.token)
    assert state() == before
    again = refused.value.plan
    assert again.dry_run and again.withdrawal is None and again.token != dry.token
    assert ids(again.withdrawn) == ids(dry.withdrawn) | ids(more)
    with pytest.raises(PlanChanged, match="confirm the dry run"):
        withdraw_episode(**kwargs)
    assert state() == before

    done = withdraw_episode(**kwargs, confirm=again.token)
    assert ids(done.withdrawn) == ids(again.withdrawn)
    assert Withdrawal.objects.count() == 1
