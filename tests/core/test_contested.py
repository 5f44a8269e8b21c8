"""What a slot with an open conflict shows: tables of slots in, what is shown out. No database."""

from datetime import UTC, datetime, timedelta

import pytest

from memories.core.contested import Member, OpenConflict, Showing, Slot, what_slot_shows

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def member(spec: str) -> Member:
    """``"b@2"``: fact b recorded on day 2, standing; ``"c@3!"``: fact c, disputed."""
    disputed = spec.endswith("!")
    fact_id, day = spec.rstrip("!").split("@")
    return Member(id=fact_id, recorded_at=T0 + timedelta(days=int(day)), disputed=disputed)


def conflict(conflict_id: str, opened: int, *members: str, kind: str = "outranked"):
    return OpenConflict(
        id=conflict_id,
        kind=kind,
        opened_at=T0 + timedelta(days=opened),
        members=tuple(member(spec) for spec in members),
    )


def shown(believed: str, *conflicts: OpenConflict):
    """What the slot shows, as plain strings: showing, current, and each contest."""
    result = what_slot_shows(Slot(believed=tuple(believed.split()), conflicts=conflicts))
    return (
        result.showing.value,
        " ".join(result.current),
        [
            (
                contest.showing.value,
                " ".join(c.id for c in contest.conflicts),
                " ".join(contest.standing),
                " ".join(c.id for c in contest.candidates),
            )
            for contest in result.contests
        ],
    )


@pytest.mark.parametrize(
    ("believed", "conflicts", "expected"),
    [
        # No open conflict: the believed values, settled.
        ("a", [], ("settled", "a", [])),
        ("a b", [], ("settled", "a b", [])),
        ("", [], ("settled", "", [])),
        # Issue 31's case: 2.0.0 (b) stands, an agent-note's 9.9.9 (c) disputes
        # it. b stays current and is shown once, as standing; c beside it.
        (
            "b",
            [conflict("k", 3, "b@1", "c@3!")],
            ("contested", "b", [("contested", "k", "b", "c")]),
        ),
        # Seed 000's stance: the commitment stands, the preference is disputed.
        (
            "commit",
            [conflict("k", 2, "commit@1", "pref@2!", kind="commitment")],
            ("contested", "commit", [("contested", "k", "commit", "pref")]),
        ),
        # A many slot: the other values stay current and are no contest's.
        (
            "fly aws",
            [conflict("k", 5, "fly@2", "heroku@5!", kind="revenant")],
            ("contested", "fly aws", [("contested", "k", "fly", "heroku")]),
        ),
        # The crawler's conflict among standing facts: every member disputed,
        # nothing current, candidates side by side by recorded time.
        (
            "",
            [conflict("k", 9, "y@4!", "x@2!", kind="contradiction")],
            ("unknown", "", [("unknown", "k", "", "x y")]),
        ),
        # The standing member is not served to this reader (awaiting a verdict):
        # unknown, and it is a candidate like the disputed one, not standing.
        ("", [conflict("k", 3, "b@1", "c@3!")], ("unknown", "", [("unknown", "k", "", "b c")])),
        # Two disputes of one standing value are one contest: b shown once.
        (
            "b",
            [conflict("k2", 6, "b@1", "d@6!"), conflict("k1", 3, "b@1", "c@3!")],
            ("contested", "b", [("contested", "k1 k2", "b", "c d")]),
        ),
        # One disputed value in two conflicts: shown once, in one contest.
        (
            "a b",
            [conflict("k1", 3, "a@1", "c@3!"), conflict("k2", 3, "b@2", "c@3!")],
            ("contested", "a b", [("contested", "k1 k2", "a b", "c")]),
        ),
        # Separate contests, by when they opened; one unknown makes the slot unknown.
        (
            "a",
            [conflict("late", 8, "x@7!", "y@8!"), conflict("early", 3, "a@1", "c@3!")],
            (
                "unknown",
                "a",
                [("contested", "early", "a", "c"), ("unknown", "late", "", "x y")],
            ),
        ),
        # A value disputed by an open conflict is never current, even if passed as believed.
        (
            "c b",
            [conflict("k", 3, "b@1", "c@3!")],
            ("contested", "b", [("contested", "k", "b", "c")]),
        ),
        # Standing values keep recall's order, not recorded order.
        (
            "late early",
            [conflict("k", 9, "early@1", "late@5", "new@9!")],
            ("contested", "late early", [("contested", "k", "late early", "new")]),
        ),
    ],
)
def test_what_a_slot_shows(believed, conflicts, expected):
    assert shown(believed, *conflicts) == expected


def test_candidates_are_ordered_by_recorded_time_whatever_their_role_or_place():
    one = shown("", conflict("k", 9, "b@5!", "a@5", "c@1!"))
    other = shown("", conflict("k", 9, "c@1!", "a@5", "b@5!"))
    # By recorded time, ties by id: c (day 1), then a and b (day 5).
    assert one == other == ("unknown", "", [("unknown", "k", "", "c a b")])


def test_no_value_is_both_current_and_a_candidate_nor_in_two_contests():
    conflicts = [
        conflict("k1", 1, "a@1", "b@2!"),
        conflict("k2", 2, "b@2!", "c@3!"),
        conflict("k3", 3, "d@1", "e@4!"),
        conflict("k4", 4, "e@4!", "a@1"),
    ]
    result = what_slot_shows(Slot(believed=("a", "d", "z"), conflicts=tuple(conflicts)))
    seen: list[str] = []
    for contest in result.contests:
        seen += [*contest.standing, *(c.id for c in contest.candidates)]
    assert sorted(seen) == sorted(set(seen)) == ["a", "b", "c", "d", "e"]
    assert not {c.id for x in result.contests for c in x.candidates} & set(result.current)
    assert result.showing is Showing.CONTESTED


def test_a_member_disputed_in_one_conflict_is_disputed_in_its_contest():
    result = what_slot_shows(
        Slot(believed=(), conflicts=(conflict("k1", 1, "a@1", "b@2"), conflict("k2", 2, "b@2!")))
    )
    (contest,) = result.contests
    assert {c.id: c.disputed for c in contest.candidates} == {"a": False, "b": True}
