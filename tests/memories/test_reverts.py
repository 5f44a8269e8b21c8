"""A steward reverts an automatic change: the prior state comes back, with a record (SPEC §12)."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from guardian.shortcuts import assign_perm

from memories.core.decisions import Rejected
from memories.maintenance.crawler import run_crawl
from memories.maintenance.judge import run_judge
from memories.store.errors import Forbidden, NotFound, StateConflict
from memories.store.models import AuditEntry, Conflict, ConflictMember, Fact
from memories.store.roles import STEWARD_PERMISSION
from memories.write.actions import invalidate_fact, resolve_conflict
from memories.write.reverts import revert_automatic_change
from tests.changes_world import (
    backdated_closings,
    crawler_conflict,
    crawler_supersession,
    decay_mark,
    judge_resolution,
    maintain,
    maintenance_closings,
    one_two_three,
    state,
    unlinked_values_now,
    write,
    write_path_supersession,
)
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def revert(actor, entry, reason="the automatic change was wrong"):
    return revert_automatic_change(actor=actor, entry_id=entry.pk, reason=reason)


def test_automatic_changes_include_write_path_supersessions_credited_to_the_writer(member):
    entry, *_ = write_path_supersession(member)
    assert entry.actor == member
    assert AuditEntry.objects.automatic().filter(pk=entry.pk).exists()
    assert not AuditEntry.objects.human().filter(pk=entry.pk).exists()


def test_reverting_a_write_path_supersession_reopens_the_old_fact_and_opens_a_conflict(
    member, steward
):
    entry, older, newer, before = write_path_supersession(member)
    record = revert(steward, entry)
    assert state(older) == before
    assert Fact.objects.get(pk=newer.pk).is_live  # someone's assertion stays
    conflict = Conflict.objects.get(kind="reverted")
    assert conflict.is_open
    assert sorted((m.fact_id, m.disputes) for m in conflict.members.all()) == sorted(
        [(older.pk, True), (newer.pk, True)]
    )
    assert (record.action, record.target_type, record.target_id) == (
        "reverted",
        "auditentry",
        str(entry.pk),
    )
    assert (record.actor, record.rule, record.reason) == (
        steward,
        "",
        "the automatic change was wrong",
    )
    assert record.before["superseded_by"] == str(newer.pk)
    assert record.after == {
        "kind": "supersession",
        "fact": str(older.pk),
        "t_invalid": None,
        "superseded_by": None,
        "opened_conflict": str(conflict.pk),
    }


def test_reverting_a_crawler_supersession_restores_the_fact_and_the_crawler_leaves_it(
    member, steward
):
    entry, older, _, before = crawler_supersession(member)
    revert(steward, entry)
    assert state(older) == before
    conflict = Conflict.objects.get(kind="reverted")
    # The next pass finds the two linked by the revert's conflict: nothing changes.
    assert run_crawl().counts == {"superseded": 0, "opened-conflict": 0, "decayed": 0}
    assert Fact.objects.get(pk=older.pk).is_live and Conflict.objects.get(pk=conflict.pk).is_open


def test_reverting_a_decay_mark_clears_it_until_the_fact_is_reinforced(member, steward, settings):
    entry, fact, before = decay_mark(member, settings)
    revert(steward, entry)
    assert state(fact) == before
    assert Fact.objects.get(pk=fact.pk).decay_reverted_at is not None
    assert run_crawl().counts["decayed"] == 0  # not marked again
    # Reinforced long ago, after the revert: the mark may come back once it fades.
    Fact.objects.filter(pk=fact.pk).update(
        last_reinforced_at=timezone.now(), decay_reverted_at=timezone.now().replace(year=2000)
    )
    settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = 1.0
    assert run_crawl().counts["decayed"] == 1


def test_reverting_a_judge_resolution_reopens_the_conflict_and_the_ended_fact(member, steward):
    entry, conflict, facts, before, adjudicator = judge_resolution(member)
    record = revert(steward, entry)
    assert state(*facts) == before
    conflict.refresh_from_db()
    assert conflict.is_open and conflict.resolution == "" and conflict.reopened_at is not None
    assert record.after["reopened"] == [str(facts[0].pk)]
    # The judge does not act again on what a steward reopened.
    [judgement] = run_judge(resolve=True, adjudicator=adjudicator)
    assert "not acted on" in judgement.outcome
    assert Conflict.objects.get(pk=conflict.pk).is_open


def test_reverting_a_crawler_conflict_dismisses_it_and_the_crawler_does_not_reopen_it(
    member, steward
):
    entry, conflict, _ = crawler_conflict(member)
    revert(steward, entry)
    conflict.refresh_from_db()
    assert (conflict.resolution, conflict.resolved_by) == ("dismissed", steward)
    assert not Fact.objects.disputed().exists()
    assert run_crawl().counts["opened-conflict"] == 0


def test_a_change_is_reverted_once(member, steward):
    entry, *_ = write_path_supersession(member)
    revert(steward, entry)
    written = AuditEntry.objects.count()
    with pytest.raises(StateConflict, match="already reverted"):
        revert(steward, entry)
    assert AuditEntry.objects.count() == written


def test_the_database_holds_one_revert_per_change(member, steward):
    entry, *_ = write_path_supersession(member)
    revert(steward, entry)
    with pytest.raises(IntegrityError), transaction.atomic():
        AuditEntry.objects.create(
            at=timezone.now(),
            scope_id=entry.scope_id,
            action="reverted",
            target_type="auditentry",
            target_id=str(entry.pk),
            actor=steward,
        )


def test_a_member_may_not_revert_and_nothing_is_written(member):
    entry, older, _, _ = write_path_supersession(member)
    closed = state(older)
    written = AuditEntry.objects.count()
    with pytest.raises(Forbidden):
        revert(member, entry)
    assert state(older) == closed and AuditEntry.objects.count() == written


def test_an_outsider_does_not_find_the_change(member, outsider):
    entry, *_ = write_path_supersession(member)
    with pytest.raises(NotFound):
        revert(outsider, entry)


def test_a_steward_of_another_scope_does_not_find_it(member, scope, other_scope):
    elsewhere = make_user("elsa")
    assign_perm(STEWARD_PERMISSION, elsewhere, other_scope)
    entry, *_ = write_path_supersession(member)
    with pytest.raises(NotFound):
        revert(elsewhere, entry)


def test_a_scope_steward_may_revert(member, scope_steward):
    entry, older, _, before = write_path_supersession(member)
    revert(scope_steward, entry)
    assert state(older) == before


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_a_revert_needs_a_reason(member, steward, reason):
    entry, older, _, _ = write_path_supersession(member)
    closed = state(older)
    with pytest.raises(Rejected, match="reason"):
        revert(steward, entry, reason)
    assert state(older) == closed


def test_a_human_action_is_not_an_automatic_change(member, steward):
    fact = write_path_supersession(member)[2]
    invalidate_fact(actor=member, fact_id=fact.pk, reason="wrong")
    entry = AuditEntry.objects.get(action="invalidated")
    with pytest.raises(NotFound):
        revert(steward, entry)


def test_a_supersession_whose_fact_moved_on_is_not_reverted(member, steward):
    entry, *_ = write_path_supersession(member)
    write(member, "AuthService", "core/has-version", "1.0")  # the old value asserted again
    written = AuditEntry.objects.count()
    with pytest.raises(StateConflict, match="cannot stand twice"):
        revert(steward, entry)
    assert AuditEntry.objects.count() == written


def test_a_resolution_whose_fact_was_reopened_elsewhere_is_not_reverted(member, steward):
    entry, conflict, facts, _, _ = judge_resolution(member)
    Conflict.objects.filter(pk=conflict.pk).update(resolved_by=steward)  # a human ruled since
    with pytest.raises(StateConflict, match="ruled on or reopened"):
        revert(steward, entry)
    assert not Fact.objects.get(pk=facts[0].pk).is_live


def test_a_write_path_conflict_is_ruled_on_not_reverted(member, steward):
    write(steward, "AuthService", "core/has-version", "2.0.0", confidence=0.95)
    write(member, "AuthService", "core/has-version", "3.0.0", source="agent-note")
    entry = AuditEntry.objects.automatic().get(action="opened-conflict")
    with pytest.raises(StateConflict, match="conflict's page"):
        revert(steward, entry)


def test_reverting_the_first_of_two_supersessions_disputes_every_live_value(member, steward):
    """1, 2 (X), 3 (Y); X reverted: 1 is back beside 3, which X's newer fact no longer is."""
    (one, two, three), x, _ = one_two_three(member)
    record = revert(steward, x, "the 2 was a mistake")
    assert [Fact.objects.get(pk=f.pk).is_live for f in (one, two, three)] == [True, False, True]
    conflict = Conflict.objects.get(kind="reverted")
    assert conflict.is_open
    assert sorted((m.fact_id, m.role, m.disputes) for m in conflict.members.all()) == sorted(
        [(one.pk, "existing", True), (three.pk, "existing", True)]
    )
    assert record.after["opened_conflict"] == str(conflict.pk)
    assert set(Fact.objects.disputed().values_list("pk", flat=True)) == {one.pk, three.pk}
    assert unlinked_values_now() == []


def test_no_maintainer_overrides_that_revert_or_dates_a_closing_before_it(member, steward):
    (one, _, three), x, _ = one_two_three(member)
    record = revert(steward, x, "the 2 was a mistake")
    conflict = Conflict.objects.get(kind="reverted")
    for minutes in (1, 2):
        maintain(one, now=record.at + timedelta(minutes=minutes))
    assert Fact.objects.get(pk=one.pk).is_live and Fact.objects.get(pk=three.pk).is_live
    assert Conflict.objects.get(pk=conflict.pk).is_open
    assert list(maintenance_closings()) == [] and backdated_closings() == []
    assert unlinked_values_now() == []
    # The revert stands, so it is still the one revert of X.
    with pytest.raises(StateConflict, match="already reverted"):
        revert(steward, x)


def test_a_revert_links_the_reopened_value_with_a_later_one_that_replaced_the_newer(
    member, steward
):
    """1, 2 (X), 3 (Y), 4 (Z); X reverted: 2 and 3 are closed, 1 and 4 are what compete."""
    (one, _, _), x, _ = one_two_three(member)
    four = write(member, "AuthService", "core/has-version", "4")
    revert(steward, x)
    conflict = Conflict.objects.get(kind="reverted")
    assert set(conflict.members.values_list("fact_id", flat=True)) == {one.pk, four.pk}
    assert unlinked_values_now() == []


def test_a_revert_links_every_competing_value_even_one_already_in_a_conflict(member, steward):
    """A low-trust 4 flagged against 3 stays in its own conflict; the revert's links 1, 3 and 4."""
    (one, _, three), x, _ = one_two_three(member)
    four = write(member, "AuthService", "core/has-version", "4", source="agent-note")
    flagged = Conflict.objects.get(kind="outranked")
    revert(steward, x)
    conflict = Conflict.objects.get(kind="reverted")
    assert set(conflict.members.values_list("fact_id", flat=True)) == {one.pk, three.pk, four.pk}
    assert all(conflict.members.values_list("disputes", flat=True))
    assert Conflict.objects.get(pk=flagged.pk).is_open
    # The flagged write's conflict closing (its incoming fact ended) leaves the revert's open.
    invalidate_fact(actor=member, fact_id=four.pk, reason="a typo")
    assert not Conflict.objects.get(pk=flagged.pk).is_open
    assert Conflict.objects.get(pk=conflict.pk).is_open
    assert unlinked_values_now() == []


def test_reverting_both_supersessions_keeps_every_live_value_in_a_conflict(member, steward):
    (one, two, three), x, y = one_two_three(member)
    revert(steward, y)
    revert(steward, x)
    assert all(Fact.objects.get(pk=f.pk).is_live for f in (one, two, three))
    assert unlinked_values_now() == []
    latest = Conflict.objects.filter(kind="reverted").order_by("opened_at", "id").last()
    assert set(latest.members.values_list("fact_id", flat=True)) == {one.pk, two.pk, three.pk}


def test_values_a_revert_left_unlinked_are_left_for_a_human_not_superseded(member, steward):
    """A store reverted before reverts linked every live value: 1 and 3 live, no conflict.

    Truth maintenance would supersede 1 by 3 by policy, the crawler link them,
    the judge end one on a confident verdict: a steward put 1 back after both
    were written, so each leaves them for a human instead.
    """
    (one, _, three), x, _ = one_two_three(member)
    record = revert(steward, x, "the 2 was a mistake")
    ConflictMember.objects.filter(conflict__kind="reverted").delete()
    Conflict.objects.filter(kind="reverted").delete()
    for minutes in (1, 2):
        maintain(one, now=record.at + timedelta(minutes=minutes))
    assert Fact.objects.get(pk=one.pk).is_live and Fact.objects.get(pk=three.pk).is_live
    assert list(maintenance_closings()) == []
    [conflict] = Conflict.objects.open()
    assert set(conflict.members.values_list("fact_id", flat=True)) == {one.pk, three.pk}
    assert unlinked_values_now() == []


def test_when_a_human_last_ruled_on_a_fact_is_read_from_rulings_reopenings_and_reverts(
    member, steward
):
    (one, two, three), x, _ = one_two_three(member)
    ids, scope_ids = [one.pk, two.pk, three.pk], [one.scope_id]
    assert ConflictMember.objects.ruled_at(ids, scope_ids=scope_ids) == {}
    record = revert(steward, x)
    # The revert's conflict names every value it put side by side.
    assert ConflictMember.objects.ruled_at(ids, scope_ids=scope_ids) == {
        one.pk: record.at,
        three.pk: record.at,
    }
    # A steward's ruling on it is later still.
    conflict = Conflict.objects.get(kind="reverted")
    resolve_conflict(actor=steward, conflict_id=conflict.pk, action="coexist", reason="both")
    resolved_at = Conflict.objects.get(pk=conflict.pk).resolved_at
    assert ConflictMember.objects.ruled_at(ids, scope_ids=scope_ids)[three.pk] == resolved_at
    # Without its conflict (a revert made before reverts opened one), the revert's record.
    ConflictMember.objects.filter(conflict=conflict).delete()
    assert ConflictMember.objects.ruled_at(ids, scope_ids=scope_ids) == {one.pk: record.at}


def test_an_automatic_resolution_is_no_ruling_and_its_revert_is_one(member, steward):
    entry, conflict, facts, _, _ = judge_resolution(member)
    ids, scope_ids = [f.pk for f in facts], [conflict.scope_id]
    assert ConflictMember.objects.ruled_at(ids, scope_ids=scope_ids) == {}
    revert(steward, entry)
    reopened_at = Conflict.objects.get(pk=conflict.pk).reopened_at
    assert ConflictMember.objects.ruled_at(ids, scope_ids=scope_ids) == dict.fromkeys(
        ids, reopened_at
    )
