"""The crawler's decision for one slot: plain facts in, effects and counts out. No database."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memories.core.crawl import (
    DecaySettings,
    SlotFact,
    crawl_slot,
    has_update_cue,
    weighs_conflicts,
)
from memories.core.decisions import PredicateSpec, SourceSpec, Vocabulary
from memories.core.effects import AuditNote, CloseInterval, MarkDecayed, OpenConflict

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)
VOCAB = Vocabulary(
    predicates={
        "core/has-version": PredicateSpec("core/has-version", "one", "observation", "supersede"),
        "core/reviewed": PredicateSpec("core/reviewed", "one", "observation", "review"),
        "core/uses": PredicateSpec("core/uses", "many", "observation", "parallel"),
        "core/happened": PredicateSpec(
            "core/happened", "one", "observation", "supersede", event_like=True
        ),
    },
    sources={
        "code": SourceSpec("code", 3, 0.95),
        "agent-note": SourceSpec("agent-note", 1, 0.65),
        "decision-record": SourceSpec("decision-record", 3, 1.0, decays=False),
    },
)
DECAY = DecaySettings(threshold=0.1, half_life_days=90.0, floor=0.05)
CONFLICT = uuid.UUID(int=99)


def fact(n: int, value: str, *, days_ago: float = 10, **fields) -> SlotFact:
    values = {
        "id": uuid.UUID(int=n),
        "predicate": "core/has-version",
        "object_key": value,
        "epistemic": "observation",
        "source_type": "code",
        "confidence": 0.9,
        "statement": "",
        "t_valid": NOW - timedelta(days=days_ago),
        "recorded_at": NOW - timedelta(days=days_ago),
        "last_reinforced_at": NOW - timedelta(days=1),
        "decayed_at": None,
        "open_conflicts": frozenset(),
    }
    values.update(fields)
    return SlotFact(**values)


def crawl(*facts: SlotFact):
    return crawl_slot(
        facts,
        VOCAB,
        scope_id=1,
        subject_id=2,
        predicate_id=3,
        now=NOW,
        conflict_id=CONFLICT,
        decay=DECAY,
    )


def kinds(outcome) -> list[type]:
    return [type(change) for change in outcome.effects.changes]


@pytest.mark.parametrize(
    ("statement", "cued"),
    [
        ("It is actually 3.0", True),
        ("NOW on 3.0", True),
        ("the version changed  to 3.0", True),
        ("use 3.0 instead", True),
        ("no longer on 2.0", True),
        ("we switched to 3.0", True),
        ("known 3.0", False),  # "now" only inside a word
        ("nowhere else", False),
        ("factually 3.0", False),
        ("", False),
    ],
)
def test_update_cues_are_whole_words_in_any_case(statement, cued):
    assert has_update_cue(statement) is cued


def test_one_value_changes_nothing():
    outcome = crawl(fact(1, "2.0"))
    assert outcome.effects.changes == ()
    assert outcome.counts == {"superseded": 0, "opened-conflict": 0, "decayed": 0}


def test_plain_disagreement_opens_a_crawler_conflict_with_every_member_disputed():
    old, new = fact(1, "2.0", days_ago=10), fact(2, "3.0", days_ago=2)
    outcome = crawl(old, new)
    assert kinds(outcome) == [OpenConflict, AuditNote]
    conflict = outcome.effects.changes[0]
    assert conflict.kind == "crawler"
    assert [(m.fact_id, m.role, m.disputes) for m in conflict.members] == [
        (old.id, "existing", True),
        (new.id, "existing", True),
    ]
    assert outcome.effects.changes[1].rule == "crawler: opened-conflict"
    assert outcome.effects.changes[1].actor_id is None
    assert outcome.counts["opened-conflict"] == 1


def test_values_already_sharing_an_open_conflict_get_nothing():
    linked = frozenset({uuid.UUID(int=50)})
    outcome = crawl(fact(1, "2.0", open_conflicts=linked), fact(2, "3.0", open_conflicts=linked))
    assert outcome.effects.changes == ()


def test_a_third_value_outside_the_open_conflict_opens_one_over_all():
    linked = frozenset({uuid.UUID(int=50)})
    outcome = crawl(
        fact(1, "2.0", open_conflicts=linked),
        fact(2, "3.0", open_conflicts=linked),
        fact(3, "4.0", days_ago=1),
    )
    assert len(outcome.effects.changes[0].members) == 3


def test_an_update_cue_on_the_newest_value_supersedes_the_older():
    old, new = fact(1, "2.0", days_ago=10), fact(2, "3.0", days_ago=2, statement="actually 3.0")
    outcome = crawl(old, new)
    assert kinds(outcome) == [CloseInterval, AuditNote]
    close = outcome.effects.changes[0]
    assert (close.fact_id, close.at, close.superseded_by, close.kind) == (
        old.id,
        new.t_valid,
        new.id,
        "superseded",
    )
    assert outcome.effects.changes[1].rule == "crawler: superseded"
    assert outcome.effects.check_moot == (old.id,)
    assert outcome.counts["superseded"] == 1


@pytest.mark.parametrize(
    ("old_fields", "new_fields", "why"),
    [
        ({"statement": "actually 2.0"}, {}, "the cue is on the older value"),
        ({"epistemic": "commitment"}, {"statement": "now 3.0"}, "the older is a commitment"),
        ({}, {"statement": "now 3.0", "epistemic": "commitment"}, "the newer is a commitment"),
        ({}, {"statement": "now 3.0", "source_type": "agent-note"}, "the older outranks"),
        ({"days_ago": 2}, {"statement": "now 3.0"}, "a valid-time tie"),
        (
            {"predicate": "core/reviewed"},
            {"predicate": "core/reviewed", "statement": "now"},
            "review",
        ),
    ],
)
def test_a_cue_the_write_path_could_not_act_on_is_a_conflict(old_fields, new_fields, why):
    old = fact(1, "2.0", **{"days_ago": 10, **old_fields})
    new = fact(2, "3.0", **{"days_ago": 2, **new_fields})
    outcome = crawl(old, new)
    assert kinds(outcome) == [OpenConflict, AuditNote], why
    assert outcome.counts["superseded"] == 0


def test_many_and_event_like_predicates_never_compete():
    for predicate in ("core/uses", "core/happened"):
        outcome = crawl(
            fact(1, "a", predicate=predicate), fact(2, "b", predicate=predicate, statement="now")
        )
        assert outcome.effects.changes == ()


@pytest.mark.parametrize(
    ("days", "decayed"),
    # 0.9 * 0.5^(d/90) crosses 0.1 at d = 90 * log2(9) ≈ 285.3 days.
    [(285.0, False), (285.6, True), (10.0, False)],
)
def test_decay_marking_at_the_threshold(days, decayed):
    outcome = crawl(fact(1, "2.0", last_reinforced_at=NOW - timedelta(days=days)))
    assert (MarkDecayed in kinds(outcome)) is decayed
    if decayed:
        mark, note = outcome.effects.changes
        assert mark == MarkDecayed(uuid.UUID(int=1), NOW)
        assert (note.rule, note.actor_id, note.action) == ("crawler: decayed", None, "decayed")


def test_what_never_decays_is_never_marked():
    long_ago = NOW - timedelta(days=5_000)
    for fields in ({"epistemic": "commitment"}, {"source_type": "decision-record"}):
        assert crawl(fact(1, "2.0", last_reinforced_at=long_ago, **fields)).effects.changes == ()


def test_decayed_facts_are_skipped_and_never_compete():
    long_ago = NOW - timedelta(days=1_000)
    already = crawl(fact(1, "2.0", decayed_at=NOW - timedelta(days=1)), fact(2, "3.0"))
    assert already.effects.changes == ()
    fresh = crawl(fact(1, "2.0", last_reinforced_at=long_ago), fact(2, "3.0"))
    assert kinds(fresh) == [MarkDecayed, AuditNote]


def test_values_a_human_ruled_on_together_are_never_reopened_nor_superseded():
    ruled = frozenset({uuid.UUID(int=60)})
    outcome = crawl(
        fact(1, "2.0", ruled_conflicts=ruled),
        fact(2, "3.0", days_ago=2, statement="actually 3.0", ruled_conflicts=ruled),
    )
    assert outcome.effects.changes == ()


def test_a_fact_reinforced_since_its_decay_mark_is_a_candidate_again():
    outcome = crawl(
        fact(
            1,
            "2.0",
            decayed_at=NOW - timedelta(days=10),
            last_reinforced_at=NOW - timedelta(days=1),
        ),
        fact(2, "3.0"),
    )
    assert kinds(outcome) == [OpenConflict, AuditNote]


# --- a steward's revert holds ------------------------------------------------------


def test_an_update_cue_does_not_settle_values_sharing_an_open_conflict():
    pending = frozenset({uuid.UUID(int=7)})
    outcome = crawl(
        fact(1, "2.0", days_ago=10, open_conflicts=pending),
        fact(2, "3.0", days_ago=2, statement="now on 3.0", open_conflicts=pending),
    )
    assert outcome.effects.changes == ()
    assert outcome.counts["superseded"] == 0


def test_an_update_cue_does_not_settle_values_a_human_ruled_on_since_they_were_recorded():
    """A steward's revert put 2.0 back a day ago, after 3.0 was written: a conflict, no cue."""
    outcome = crawl(
        fact(1, "2.0", days_ago=10, ruled_at=NOW - timedelta(days=1)),
        fact(2, "3.0", days_ago=2, statement="now on 3.0"),
    )
    assert kinds(outcome) == [OpenConflict, AuditNote]
    assert outcome.counts["superseded"] == 0


def test_a_cue_acted_on_after_an_older_ruling_closes_no_earlier_than_the_ruling():
    """3.0 written today, valid from 2 days ago; a human ruled on 2.0 a day ago."""
    old = fact(1, "2.0", days_ago=10, ruled_at=NOW - timedelta(days=1))
    new = fact(2, "3.0", days_ago=2, recorded_at=NOW, statement="now on 3.0")
    close, note = crawl(old, new).effects.changes
    assert (close.fact_id, close.at) == (old.id, NOW - timedelta(days=1))
    assert note.after["t_invalid"] == (NOW - timedelta(days=1)).isoformat()


@pytest.mark.parametrize(
    ("reverted", "reinforced", "marked"),
    [
        pytest.param(None, 400, True, id="no-revert-marked"),
        pytest.param(300, 400, False, id="reverted-after-the-last-reinforcement-not-marked"),
        pytest.param(500, 400, True, id="reinforced-since-the-revert-marked-when-faded"),
    ],
)
def test_a_reverted_decay_mark_is_not_made_again_until_the_fact_is_reinforced(
    reverted, reinforced, marked
):
    # ``reverted`` and ``reinforced``: days ago; 400 days unused reads far below 0.1.
    old = fact(
        1,
        "2.0",
        days_ago=500,
        last_reinforced_at=NOW - timedelta(days=reinforced),
        decay_reverted_at=None if reverted is None else NOW - timedelta(days=reverted),
    )
    assert (MarkDecayed in kinds(crawl(old))) is marked


@pytest.mark.parametrize(
    ("predicate", "facts", "weighed"),
    [
        ("core/has-version", 2, True),
        ("core/has-version", 1, False),  # one value competes with nothing
        ("core/uses", 5, False),  # many-valued: values coexist
        ("core/happened", 3, False),  # event-like
        ("core/reviewed", 2, True),
    ],
)
def test_only_slots_of_competing_values_weigh_their_conflicts(predicate, facts, weighed):
    assert weighs_conflicts(predicate, facts, VOCAB) is weighed
