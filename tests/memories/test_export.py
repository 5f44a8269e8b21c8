"""Export and restore: an emptied store comes back with its ids, facts, statuses and conflicts."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from admissions.actions import correct_fact, file_challenge, record_verdict, refute_challenge
from admissions.models import Record
from admissions.selectors import fact_status
from memories.store.models import (
    AuditEntry,
    Conflict,
    ConflictMember,
    Entity,
    EntityMerge,
    Fact,
    Outcome,
    Scope,
    Withdrawal,
)
from memories.write.actions import assert_fact, invalidate_fact, record_outcome, resolve_conflict
from memories.write.episodes import withdraw_episode
from memories.write.merges import merge_entities
from tests.conftest import at

pytestmark = pytest.mark.django_db

T0 = at("2026-02-01T08:00:00")

# Children before parents; the derived admissions tables too, since with
# triggers off nothing keeps them in step.
DOMAIN_TABLES = [
    "admissions_factverdict",
    "admissions_openchallenge",
    "admissions_scopetally",
    "admissions_record",
    "memories_auditentry",
    "memories_withdrawal",
    "memories_outcome_facts",
    "memories_outcome",
    "memories_conflictmember",
    "memories_conflict",
    "memories_fact",
    "memories_entitymerge",
    "memories_entity",
    "guardian_userobjectpermission",
    "memories_scope_members",
    "memories_scope",
]


def build_store(member, author, steward, scope_steward) -> None:
    """A scope with a bit of everything: each kind of write, ruling and record."""
    step = iter(range(1, 1_000))

    def now():
        return T0 + timedelta(minutes=next(step))

    def write(actor, subject, predicate, obj, source, **extra):
        data = {"scope": "project", "subject": subject, "predicate": predicate}
        data |= {"object": obj, "source_type": source, **extra}
        return assert_fact(actor=actor, data=data, now=now())

    auth = Entity(scope=Scope.objects.get(name="project"), name="AuthService", aliases=["auth"])
    auth.set_keys()
    auth.save()
    v2 = write(author, "AuthService", "core/has-version", "2.0.0", "code", confidence=0.95)
    note = write(author, "auth", "core/has-version", "3.0.0", "agent-note")
    write(author, "AuthService", "core/has-version", "2.1.0", "code")
    write(
        author, "api", "core/decided-against", "GraphQL", "decision-record", epistemic="commitment"
    )
    clash = write(member, "api", "core/prefers", "GraphQL", "session-log")
    resolve_conflict(
        actor=steward,
        conflict_id=clash.conflict.pk,
        action="keep",
        keep=[clash.candidates[0].pk],
        reason="the ADR stands",
        now=now(),
    )
    write(member, "api", "core/depends-on", "Postgres", "code", object_kind="entity")
    pg = write(member, "api", "core/depends-on", "PG", "code", object_kind="entity")
    merge_entities(
        actor=steward,
        entity_id=pg.fact.object_ref_id,
        into_id=Entity.objects.get(name="Postgres").pk,
        reason="same",
        now=now(),
    )
    write(member, "editor", "core/prefers", "vim", "user-assertion", bucket="user")
    kept = write(member, "team", "core/uses", "pytest", "session-log", evidence=[{"ref": "log"}])
    write(member, "team", "core/uses", "pytest", "user-assertion", evidence=["chat"])
    old = write(member, "shoply", "core/deployed-via", "Heroku", "user-assertion")
    invalidate_fact(actor=member, fact_id=old.fact.pk, reason="moved", now=now())
    write(member, "shoply", "core/deployed-via", "Fly", "user-assertion")
    write(member, "shoply", "core/deployed-via", "Heroku", "agent-note")
    write(member, "svc", "core/owned-by", "core team", "code", episode="run-1")
    write(member, "db", "core/has-version", "15", "code")
    write(member, "db", "core/has-version", "16", "agent-note")  # stays open

    fact = v2.fact
    record_verdict(actor=steward, fact_id=kept.fact.pk, verdict="admitted", ground="ok", now=now())
    record_verdict(actor=steward, fact_id=note.fact.pk, verdict="rejected", ground="no", now=now())
    challenge = file_challenge(
        actor=member, fact_id=kept.fact.pk, ground="stale", evidence=[{"ref": "ci.yml"}], now=now()
    )
    file_challenge(actor=author, fact_id=kept.fact.pk, ground="meh", evidence=None, now=now())
    refute_challenge(actor=scope_steward, challenge_id=challenge.pk, ground="still true", now=now())
    # A repeat by one account on one fact, as records from before the rule that refuses
    # it hold (issue 30 item 7): written past the action, and restored as it was.
    Record.objects.create(
        scope=kept.fact.scope,
        fact=kept.fact,
        role="challenge",
        ground="again",
        evidence=[{"ref": "x"}],
        author=author,
        inserted_at=now(),
    )
    correct_fact(
        actor=steward,
        fact_id=Fact.objects.get(object_lit="Fly").pk,
        changes={"object": "Fly.io"},
        ground="official name",
        now=now(),
    )
    record_outcome(actor=member, fact_ids=[kept.fact.pk], now=now())
    withdrawal = {"actor": steward, "scope": "project", "episode": "run-1", "reason": "bad run"}
    dry = withdraw_episode(**withdrawal, dry_run=True)
    withdraw_episode(**withdrawal, confirm=dry.token, now=now())
    # What a steward's revert of an automatic change leaves behind (memories.write.reverts).
    Fact.objects.filter(pk=kept.fact.pk).update(decay_reverted_at=now())
    Conflict.objects.filter(pk=Conflict.objects.order_by("opened_at")[0].pk).update(
        reopened_at=now()
    )
    assert fact.pk


def snapshot() -> dict:
    def rows(model, *order):
        return [{k: v for k, v in row.items()} for row in model.objects.order_by(*order).values()]

    scope = Scope.objects.get(name="project")
    facts = list(Fact.objects.filter(scope=scope).select_related("scope"))
    return {
        "scope": (scope.pk, scope.description, scope.created_at),
        "members": sorted(scope.members.values_list("username", flat=True)),
        "stewards": sorted(
            u.username for u in User.objects.filter(userobjectpermission__isnull=False)
        ),
        "entities": rows(Entity, "id"),
        "merges": rows(EntityMerge, "id"),
        "facts": rows(Fact, "id"),
        "conflicts": rows(Conflict, "id"),
        "members_of_conflicts": rows(ConflictMember, "id"),
        "records": rows(Record, "id"),
        "statuses": {
            f.pk: (s.status, s.explanation) for f in facts if (s := fact_status(f)) is not None
        },
        "outcomes": [(o.pk, sorted(f.pk for f in o.facts.all())) for o in Outcome.objects.all()],
        "withdrawals": rows(Withdrawal, "id"),
        "audit": rows(AuditEntry, "id"),
    }


def empty_the_store() -> None:
    # With triggers off (a superuser's session setting, undone with the
    # test's transaction), the append-only record table can be emptied too.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        for table in DOMAIN_TABLES:
            cursor.execute(f"DELETE FROM {table}")
        cursor.execute("SET LOCAL session_replication_role = DEFAULT")


def export_text(*args) -> str:
    out = StringIO()
    call_command("export_facts", *args, stdout=out)
    return out.getvalue()


def without_header(text: str) -> list[str]:
    return text.splitlines()[1:]


def test_an_export_restores_into_an_empty_store_exactly(
    member, author, steward, scope_steward, tmp_path
):
    build_store(member, author, steward, scope_steward)
    before = snapshot()
    assert {s for s, _ in before["statuses"].values()} >= {"admitted", "rejected", "suspended"}
    assert any(c["resolved_at"] is None for c in before["conflicts"])
    exported = export_text("--scope", "project")
    kinds = [json.loads(line)["kind"] for line in exported.splitlines()]
    assert kinds[0] == "claimgraph-export"
    assert {"scope", "entity", "entity_merge", "fact", "conflict", "record", "audit"} <= set(kinds)

    empty_the_store()
    assert Fact.objects.count() == Record.objects.count() == 0
    path = tmp_path / "export.jsonl"
    path.write_text(exported, encoding="utf-8")
    out = StringIO()
    call_command("restore_export", str(path), stdout=out)
    assert "Restored:" in out.getvalue()

    after = snapshot()
    for part in before:
        assert after[part] == before[part], part
    # And the restored store exports to the same lines.
    assert without_header(export_text("--scope", "project")) == without_header(exported)


def test_new_rows_after_a_restore_get_fresh_ids(member, author, steward, scope_steward, tmp_path):
    build_store(member, author, steward, scope_steward)
    exported = export_text()
    empty_the_store()
    path = tmp_path / "export.jsonl"
    path.write_text(exported, encoding="utf-8")
    call_command("restore_export", str(path), stdout=StringIO())
    highest = Entity.objects.order_by("-id").first().pk
    result = assert_fact(
        actor=member,
        data={
            "scope": "project",
            "subject": "brand-new",
            "predicate": "core/uses",
            "object": "x",
            "source_type": "code",
        },
    )
    assert result.fact.subject_id > highest


def test_a_restore_refuses_a_scope_that_exists_and_writes_nothing(member, author, tmp_path):
    assert_fact(
        actor=member,
        data={
            "scope": "project",
            "subject": "a",
            "predicate": "core/uses",
            "object": "b",
            "source_type": "code",
        },
    )
    path = tmp_path / "export.jsonl"
    path.write_text(export_text(), encoding="utf-8")
    facts = Fact.objects.count()
    with pytest.raises(CommandError, match="already exists"):
        call_command("restore_export", str(path), stdout=StringIO())
    assert Fact.objects.count() == facts


def test_a_restore_creates_the_accounts_it_names(member, tmp_path):
    assert_fact(
        actor=member,
        data={
            "scope": "project",
            "subject": "a",
            "predicate": "core/uses",
            "object": "b",
            "source_type": "code",
        },
    )
    exported = export_text()
    empty_the_store()
    text = exported.replace('"mira"', '"mira-elsewhere"')
    path = tmp_path / "export.jsonl"
    path.write_text(text, encoding="utf-8")
    out = StringIO()
    call_command("restore_export", str(path), stdout=out)
    assert "mira-elsewhere" in out.getvalue()
    restored = User.objects.get(username="mira-elsewhere")
    assert not restored.has_usable_password()
    assert Fact.objects.get().author == restored


def test_a_damaged_export_is_refused_with_its_line_number(member, tmp_path):
    path = tmp_path / "export.jsonl"
    path.write_text('{"kind": "claimgraph-export", "version": 1}\n{"kind": "fact"\n')
    with pytest.raises(CommandError, match="line 2"):
        call_command("restore_export", str(path), stdout=StringIO())
