"""The pure revert of an automatic change: which kind it is, what it restores, when it refuses."""

from datetime import UTC, datetime
from uuid import UUID

import pytest

from memories.core.effects import (
    AuditNote,
    ClearDecay,
    CloseConflict,
    Member,
    OpenConflict,
    Reopen,
    ReopenConflict,
)
from memories.core.reverts import (
    ConflictNow,
    Entry,
    FactNow,
    NotRevertible,
    revert_effects,
    revert_kind,
)

T0 = datetime(2026, 5, 1, tzinfo=UTC)
T1 = datetime(2026, 5, 2, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)
OLD = UUID(int=1)
NEW = UUID(int=2)
CONFLICT = UUID(int=10)
NEXT = UUID(int=99)


def entry(action, rule, target, after=None, at=T1) -> Entry:
    return Entry(7, at, 3, action, "fact", str(target), None, after, rule)


def fact(fact_id, *, live=True, kind="", by=None, ended_at=None, who=None, **extra) -> FactNow:
    return FactNow(
        id=fact_id,
        t_invalid=None if live else T1,
        invalidated_at=None if live else ended_at or T1,
        invalidated_by=who,
        invalidation_kind=kind,
        superseded_by=by,
        decayed_at=extra.pop("decayed_at", None),
        last_reinforced_at=extra.pop("last_reinforced_at", T0),
        **extra,
    )


WRITE_PATH = entry(
    "superseded", "write path: supersede", NEW, {"fact": str(OLD), "superseded_by": str(NEW)}
)
CRAWLER = entry("superseded", "crawler: superseded", OLD, {"superseded_by": str(NEW)})
DECAYED = entry("decayed", "crawler: decayed", OLD)
JUDGED = entry("resolved-conflict", "judge: supersede", CONFLICT, {"invalidated": [str(OLD)]})
MOOT = entry("closed-conflict", "moot: a side is no longer live", CONFLICT, {})


@pytest.mark.parametrize(
    ("change", "kind", "facts", "conflict"),
    [
        pytest.param(WRITE_PATH, "supersession", (OLD, NEW), None, id="write-path-supersession"),
        pytest.param(CRAWLER, "supersession", (OLD, NEW), None, id="crawler-supersession"),
        pytest.param(DECAYED, "decay", (OLD,), None, id="decay-mark"),
        pytest.param(
            entry("opened-conflict", "crawler: opened-conflict", CONFLICT),
            "opened-conflict",
            (),
            CONFLICT,
            id="crawler-conflict",
        ),
        pytest.param(JUDGED, "resolution", (OLD,), CONFLICT, id="judge-resolution"),
        pytest.param(MOOT, "resolution", (), CONFLICT, id="moot-closing"),
    ],
)
def test_each_automatic_change_has_its_kind(change, kind, facts, conflict):
    target = revert_kind(change)
    assert (target.kind, target.fact_ids, target.conflict_id) == (kind, facts, conflict)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        pytest.param(entry("invalidated", "", OLD), "not an automatic change", id="human"),
        pytest.param(
            entry("opened-conflict", "write path: outranked", CONFLICT),
            "conflict's page",
            id="write-path-conflict",
        ),
        pytest.param(
            entry("recomputed", "truth: policy", OLD), "no revert is defined", id="unknown"
        ),
        pytest.param(
            entry("superseded", "crawler: superseded", OLD, {}), "does not say", id="no-record"
        ),
    ],
)
def test_what_cannot_be_reverted_is_refused_with_why(change, why):
    with pytest.raises(NotRevertible, match=why):
        revert_kind(change)


def effects_of(change, facts, conflict=None, *, compete=True, rivals=()):
    return revert_effects(
        change,
        revert_kind(change),
        facts={f.id: f for f in facts},
        conflict=conflict,
        values_compete=compete,
        rivals=rivals,
        slot=(4, 5),
        new_conflict_id=NEXT,
        reason="wrong",
        actor_id=8,
        now=NOW,
    ).changes


def superseded_old(**extra):
    return fact(OLD, live=False, kind="superseded", by=NEW, **extra)


LATER = UUID(int=3)  # a value that superseded NEW since
FLAGGED = UUID(int=4)  # a value flagged against LATER


@pytest.mark.parametrize(
    ("newer_live", "rivals", "compete", "members"),
    [
        pytest.param(True, (NEW,), True, (OLD, NEW), id="the-newer-value-competes"),
        pytest.param(True, (NEW,), False, None, id="a-many-valued-slot-holds-both"),
        pytest.param(False, (), True, None, id="nothing-else-live-nothing-to-link"),
        pytest.param(False, (LATER,), True, (OLD, LATER), id="a-later-value-replaced-the-newer"),
        pytest.param(
            False, (LATER, FLAGGED), True, (OLD, LATER, FLAGGED), id="every-live-value-competes"
        ),
    ],
)
def test_a_supersession_reopens_the_older_fact(newer_live, rivals, compete, members):
    changes = effects_of(
        WRITE_PATH,
        [superseded_old(), fact(NEW, live=newer_live)],
        compete=compete,
        rivals=rivals,
    )
    assert changes[0] == Reopen(OLD)
    opened = [c for c in changes if isinstance(c, OpenConflict)]
    if members is None:
        assert opened == []
    else:
        [conflict] = opened
        assert (conflict.kind, conflict.subject_id, conflict.predicate_id) == ("reverted", 4, 5)
        # No winner: every member is disputed, none incoming.
        assert conflict.members == tuple(Member(m, "existing", True) for m in members)
    record = changes[-1]
    assert isinstance(record, AuditNote)
    assert (record.action, record.target_type, record.target_id, record.actor_id, record.rule) == (
        "reverted",
        "auditentry",
        "7",
        8,
        "",
    )


@pytest.mark.parametrize(
    ("older", "why"),
    [
        pytest.param(fact(OLD), "no longer closed", id="reopened-since"),
        pytest.param(
            fact(OLD, live=False, kind="invalidated"), "no longer closed", id="ended-by-a-human"
        ),
        pytest.param(superseded_old(twin_live=True), "cannot stand twice", id="value-live-again"),
    ],
)
def test_a_supersession_that_moved_on_is_refused(older, why):
    with pytest.raises(NotRevertible, match=why):
        effects_of(CRAWLER, [older, fact(NEW)])


@pytest.mark.parametrize(
    ("decayed_at", "reinforced", "ok"),
    [
        pytest.param(T1, T0, True, id="the-mark-holds"),
        pytest.param(NOW, T0, False, id="marked-again-since"),
        pytest.param(T1, NOW, False, id="reinforced-since"),
        pytest.param(None, T0, False, id="cleared-since"),
    ],
)
def test_a_decay_mark_is_cleared_only_while_it_holds(decayed_at, reinforced, ok):
    marked = fact(OLD, decayed_at=decayed_at, last_reinforced_at=reinforced)
    if ok:
        assert effects_of(DECAYED, [marked])[0] == ClearDecay(OLD, NOW)
    else:
        with pytest.raises(NotRevertible):
            effects_of(DECAYED, [marked])


def conflict_now(resolved_at=T1, by=None, members=((OLD, "existing"), (NEW, "existing"))):
    return ConflictNow(CONFLICT, 4, 5, resolved_at, by, "kept" if resolved_at else "", members)


def test_a_crawler_conflict_is_dismissed_by_the_steward():
    change = entry("opened-conflict", "crawler: opened-conflict", CONFLICT)
    closing = effects_of(change, [], conflict_now(resolved_at=None))[0]
    assert closing == CloseConflict(CONFLICT, NOW, "dismissed", "wrong", 8)
    with pytest.raises(NotRevertible, match="no longer open"):
        effects_of(change, [], conflict_now())


def ended_by_judge(**extra):
    return fact(OLD, live=False, kind="invalidated", **extra)


@pytest.mark.parametrize(
    ("conflict", "ended", "why"),
    [
        pytest.param(conflict_now(), ended_by_judge(), None, id="reopens"),
        pytest.param(conflict_now(by=8), ended_by_judge(), "ruled on", id="a-human-ruled-since"),
        pytest.param(conflict_now(resolved_at=None), ended_by_judge(), "ruled on", id="open-since"),
        pytest.param(
            conflict_now(), ended_by_judge(who=8), "changed since", id="fact-ended-by-a-human"
        ),
        pytest.param(
            conflict_now(), ended_by_judge(ended_at=NOW), "changed since", id="ended-later"
        ),
        pytest.param(
            conflict_now(), ended_by_judge(twin_live=True), "twice", id="value-live-again"
        ),
    ],
)
def test_an_automatic_resolution_reopens_while_nothing_moved_on(conflict, ended, why):
    facts = [ended, fact(NEW)]
    if why is None:
        changes = effects_of(JUDGED, facts, conflict)
        assert changes[:2] == (ReopenConflict(CONFLICT, NOW), Reopen(OLD))
    else:
        with pytest.raises(NotRevertible, match=why):
            effects_of(JUDGED, facts, conflict)


def test_a_moot_closing_reopens_only_when_both_sides_are_live_again():
    members = ((OLD, "incoming"), (NEW, "existing"))
    moot = conflict_now(members=members)
    assert effects_of(MOOT, [fact(OLD), fact(NEW)], moot)[0] == ReopenConflict(CONFLICT, NOW)
    with pytest.raises(NotRevertible, match="still not live"):
        effects_of(MOOT, [fact(OLD, live=False, kind="superseded"), fact(NEW)], moot)
