"""The effects builders: decisions in, plain values out. No database."""

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memories.core.decisions import Decision, Evidence, Reinforcement, Rejected
from memories.core.effects import (
    MOOT_REASON,
    MOOT_RULE,
    SUPERSEDE_RULE,
    AuditNote,
    CloseConflict,
    CloseInterval,
    Member,
    MemberState,
    NewFact,
    OpenConflict,
    Reinforce,
    invalidation_effects,
    moot_effects,
    resolution_effects,
    set_aside_effects,
    write_effects,
)

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
EARLIER = NOW - timedelta(days=3)
SOURCES = {"code": 7, "agent-note": 9}
OLD, OTHER, NEW, CONFLICT = (uuid.UUID(int=n) for n in (1, 2, 3, 4))


def incoming(**values) -> NewFact:
    fields = {
        "id": NEW,
        "scope_id": 1,
        "subject_id": 2,
        "predicate_id": 3,
        "object_kind": "literal",
        "object_ref_id": None,
        "object_lit": "2.1.0",
        "object_key": "2.1.0",
        "epistemic": "observation",
        "source_type_id": 7,
        "confidence": 0.8,
        "episode": "",
        "statement": "",
        "evidence": (),
        "author_id": 5,
        "bucket": "system",
        "t_valid": EARLIER,
        "t_invalid": None,
        "recorded_at": NOW,
        "last_reinforced_at": NOW,
    }
    return NewFact(**{**fields, **values})


def kinds(effects) -> list[str]:
    return [type(change).__name__ for change in effects.changes]


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (Decision("created", confidence=0.7), ["NewFact"]),
        (
            Decision("superseded", confidence=0.7, supersedes=(OLD, OTHER), rationale="newer"),
            ["CloseInterval", "CloseInterval", "NewFact", "AuditNote", "AuditNote"],
        ),
        (
            Decision(
                "flagged", reason="outranked", confidence=0.4, candidates=(OLD,), rationale="lower"
            ),
            ["NewFact", "OpenConflict", "AuditNote"],
        ),
        (
            Decision(
                "reinforced",
                reinforcement=Reinforcement(OLD, 0.9, "code", (Evidence("a"),), False),
            ),
            ["Reinforce"],
        ),
    ],
)
def test_each_status_has_its_effects_in_application_order(decision, expected):
    assert kinds(write_effects(decision, incoming(), conflict_id=CONFLICT, source_ids=SOURCES)) == (
        expected
    )


def test_a_supersession_closes_at_the_new_t_valid_points_at_it_and_weighs_mootness():
    decision = Decision("superseded", confidence=0.7, supersedes=(OLD,), rationale="newer")
    effects = write_effects(decision, incoming(), conflict_id=CONFLICT, source_ids=SOURCES)
    close, fact, note = effects.changes
    assert close == CloseInterval(OLD, EARLIER, NOW, "superseded", "newer", NEW, 5)
    assert fact.confidence == 0.7  # the decision's, not the requested one
    assert note == AuditNote(
        NOW,
        1,
        "superseded",
        "fact",
        str(NEW),
        {"fact": str(OLD), "t_invalid": None},
        {"fact": str(OLD), "t_invalid": EARLIER.isoformat(), "superseded_by": str(NEW)},
        "newer",
        SUPERSEDE_RULE,
        5,
    )
    assert effects.check_moot == (OLD,)
    assert effects.now == NOW


def test_a_flagged_write_opens_a_conflict_of_the_new_fact_against_the_candidates():
    decision = Decision(
        "flagged", reason="outranked", confidence=0.4, candidates=(OLD, OTHER), rationale="lower"
    )
    effects = write_effects(decision, incoming(), conflict_id=CONFLICT, source_ids=SOURCES)
    _, conflict, note = effects.changes
    assert conflict == OpenConflict(
        CONFLICT,
        "outranked",
        1,
        2,
        3,
        NOW,
        (
            Member(NEW, "incoming", True),
            Member(OLD, "existing", False),
            Member(OTHER, "existing", False),
        ),
    )
    assert (note.action, note.rule, note.reason, note.actor_id) == (
        "opened-conflict",
        "write path: outranked",
        "lower",
        5,
    )
    assert effects.check_moot == ()


def test_a_reinforcement_names_the_source_by_id():
    decision = Decision(
        "reinforced", reinforcement=Reinforcement(OLD, 0.9, "agent-note", (Evidence("a"),), True)
    )
    effects = write_effects(decision, incoming(), conflict_id=CONFLICT, source_ids=SOURCES)
    assert effects.changes == (Reinforce(OLD, 0.9, 9, (Evidence("a"),), NOW),)


@pytest.mark.parametrize(
    ("members", "closes"),
    [
        ([("incoming", False), ("existing", True)], True),
        ([("incoming", True), ("existing", False)], True),
        ([("incoming", True), ("existing", True), ("existing", False)], False),
        ([("existing", True), ("existing", True)], False),
        ([("existing", True), ("existing", False)], True),
    ],
)
def test_a_moot_conflict_closes_by_itself_with_the_one_rule(members, closes):
    changes = moot_effects(CONFLICT, 1, members, now=NOW)
    if not closes:
        assert changes == ()
        return
    close, note = changes
    assert close == CloseConflict(CONFLICT, NOW, "moot", MOOT_REASON)
    assert (note.action, note.rule, note.actor_id) == ("closed-conflict", MOOT_RULE, None)


@pytest.mark.parametrize(
    ("members", "closes"),
    [
        ([("incoming", False), ("existing", True)], True),
        ([("incoming", True), ("existing", False)], True),
        ([("incoming", True), ("existing", True), ("existing", False)], False),
        ([("existing", True), ("existing", False), ("existing", True)], False),
    ],
)
def test_a_conflict_a_person_left_without_two_sides_closes_as_their_act(members, closes):
    changes = set_aside_effects(
        CONFLICT,
        1,
        members,
        now=NOW,
        reason="x was rejected",
        actor_id=5,
        cause={"rejected": str(NEW)},
    )
    if not closes:
        assert changes == ()
        return
    close, note = changes
    assert close == CloseConflict(CONFLICT, NOW, "moot", "x was rejected", resolved_by=5)
    assert (note.action, note.rule, note.actor_id, note.reason) == (
        "closed-conflict",
        "",
        5,
        "x was rejected",
    )
    assert note.after == {"status": "resolved", "resolution": "moot", "rejected": str(NEW)}


def test_an_invalidation_records_its_end_in_utc_and_weighs_mootness():
    before = {"t_invalid": None, "invalidation_kind": "", "superseded_by": None}
    ends = datetime(2026, 6, 1, 14, tzinfo=timezone(timedelta(hours=2)))
    effects = invalidation_effects(
        OLD, 1, before, at=ends, now=NOW, kind="invalidated", reason="wrong", actor_id=5
    )
    close, note = effects.changes
    assert close == CloseInterval(OLD, ends, NOW, "invalidated", "wrong", None, 5)
    assert note.after["t_invalid"] == "2026-06-01T12:00:00+00:00"
    assert (note.action, note.before, note.rule) == ("invalidated", before, "")
    assert effects.check_moot == (OLD,)


def test_keeping_one_member_ends_the_other_live_ones_now():
    members = [
        MemberState(OLD, True, EARLIER),
        MemberState(OTHER, True, EARLIER),
        MemberState(NEW, False, EARLIER),
    ]
    effects = resolution_effects(
        CONFLICT,
        1,
        members,
        action="keep",
        keep=frozenset({OLD}),
        reason="checked",
        now=NOW,
        actor_id=5,
    )
    close, resolve, note = effects.changes
    assert close == CloseInterval(OTHER, NOW, NOW, "invalidated", "checked", None, 5)
    assert resolve == CloseConflict(CONFLICT, NOW, "kept", "checked", 5, frozenset({OLD}))
    assert note.after["invalidated"] == [str(OTHER)]
    assert effects.check_moot == (OTHER,)


@pytest.mark.parametrize(
    ("action", "resolution"), [("coexist", "coexist"), ("dismiss", "dismissed")]
)
def test_coexist_and_dismiss_end_nothing(action, resolution):
    members = [MemberState(OLD, True, EARLIER), MemberState(OTHER, True, EARLIER)]
    effects = resolution_effects(
        CONFLICT, 1, members, action=action, keep=frozenset(), reason="ok", now=NOW, actor_id=5
    )
    assert kinds(effects) == ["CloseConflict", "AuditNote"]
    assert effects.changes[0].resolution == resolution
    assert effects.changes[0].kept is None


def test_keeping_cannot_end_a_fact_that_starts_in_the_future():
    members = [MemberState(OLD, True, EARLIER), MemberState(OTHER, True, NOW + timedelta(days=1))]
    with pytest.raises(Rejected):
        resolution_effects(
            CONFLICT,
            1,
            members,
            action="keep",
            keep=frozenset({OLD}),
            reason="x",
            now=NOW,
            actor_id=5,
        )
