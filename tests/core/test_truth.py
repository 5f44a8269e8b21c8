"""Truth slots' pure decision: tables of claims in, outcomes out. No database."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from memories.core.decisions import Evidence, PredicateSpec
from memories.core.truth import (
    Claim,
    claim_set_hash,
    decide_slot,
    semantics_version,
    settle,
    truth_effects,
)
from memories.core.verdicts import Verdict

NOW = datetime(2026, 6, 1, tzinfo=UTC)
DAY = timedelta(days=1)

HAS_VERSION = PredicateSpec("core/has-version", "one", "observation", "supersede")
LOCATED_IN = PredicateSpec("core/located-in", "one", "observation", "parallel")
OWNED_BY = PredicateSpec("core/owned-by", "one", "observation", "review")
USES = PredicateSpec("core/uses", "many", "observation", "parallel")
RELEASED = PredicateSpec("core/released", "one", "observation", "supersede", event_like=True)

RANKS = {"decision-record": 3, "code": 3, "user-assertion": 3, "session-log": 2, "agent-note": 1}


def claim(
    fact_id: str,
    value: str,
    *,
    source: str = "code",
    epistemic: str = "observation",
    effective: float = 0.8,
    began: int = 10,
    recorded: int | None = None,
    evidence: tuple[tuple[str, str], ...] = (),
    disputed: bool = False,
    open_conflicts: frozenset = frozenset(),
    ruled_conflicts: frozenset = frozenset(),
    ruled: int | None = None,
) -> Claim:
    """A claim whose value began ``began`` days before NOW (recorded then, unless told).

    ``ruled``: a human ruled on it that many days before NOW.
    """
    return Claim(
        fact_id=fact_id,
        object_kind="literal",
        object_key=value.casefold(),
        object=value,
        epistemic=epistemic,
        source_type=source,
        trust_rank=RANKS[source],
        confidence=effective,
        effective_confidence=effective,
        t_valid=NOW - began * DAY,
        recorded_at=NOW - (began if recorded is None else recorded) * DAY,
        evidence=tuple(Evidence(ref, quote) for ref, quote in evidence),
        disputed=disputed,
        open_conflicts=open_conflicts,
        ruled_conflicts=ruled_conflicts,
        ruled_at=None if ruled is None else NOW - ruled * DAY,
    )


def verdict_for(claims, kind, *, winner=None, confidence=0.9) -> Verdict:
    return Verdict(
        kind=kind,
        confidence=confidence,
        rationale="because",
        claim_set_hash=claim_set_hash(c.fact_id for c in claims),
        winner=winner,
    )


def shape(outcome):
    """(decided_by, [(value, status, fact ids)], supersessions, conflict) for one table row."""
    return (
        outcome.decided_by,
        [(v.object, v.status, v.fact_ids) for v in outcome.values],
        [(s.fact_id, s.by) for s in outcome.supersessions],
        outcome.conflict and (outcome.conflict.kind, outcome.conflict.fact_ids),
    )


V2 = claim("a", "2.0.0", began=20, effective=0.9)
V3 = claim("b", "3.0.0", began=5, effective=0.7)
V4 = claim("c", "4.0.0", began=1, effective=0.6)

DETECTION = [
    pytest.param(HAS_VERSION, [], ("detection", [], [], None), id="no-claim-no-value"),
    pytest.param(
        HAS_VERSION, [V2], ("detection", [("2.0.0", "current", ("a",))], [], None), id="one-value"
    ),
    pytest.param(
        HAS_VERSION,
        [V2, claim("b", "2.0.0", began=3)],
        ("detection", [("2.0.0", "current", ("a", "b"))], [], None),
        id="equal-values-corroborate-into-one",
    ),
    pytest.param(
        USES,
        [V3, V2],
        ("detection", [("2.0.0", "current", ("a",)), ("3.0.0", "current", ("b",))], [], None),
        id="many-valued-values-coexist-ranked",
    ),
    pytest.param(
        RELEASED,
        [V2, V3],
        ("detection", [("2.0.0", "current", ("a",)), ("3.0.0", "current", ("b",))], [], None),
        id="event-like-values-never-compete",
    ),
    pytest.param(
        HAS_VERSION,
        [V2, claim("b", "3.0.0", disputed=True)],
        ("detection", [("2.0.0", "current", ("a",)), ("3.0.0", "disputed", ("b",))], [], None),
        id="a-disputed-value-is-never-current",
    ),
    pytest.param(
        HAS_VERSION,
        [claim("a", "2.0.0", disputed=True), claim("b", "3.0.0", disputed=True)],
        ("detection", [("2.0.0", "disputed", ("a",)), ("3.0.0", "disputed", ("b",))], [], None),
        id="all-disputed-no-current-value",
    ),
]

POLICY = [
    pytest.param(
        LOCATED_IN,
        [V3, V2, V4],
        (
            "policy",
            [
                ("2.0.0", "current", ("a",)),
                ("3.0.0", "current", ("b",)),
                ("4.0.0", "current", ("c",)),
            ],
            [],
            None,
        ),
        id="parallel-keeps-all-ranked-by-effective-confidence",
    ),
    pytest.param(
        HAS_VERSION,
        [V2, V3],
        (
            "policy",
            [("3.0.0", "current", ("b",)), ("2.0.0", "superseded", ("a",))],
            [("a", "b")],
            None,
        ),
        id="supersede-keeps-the-newest-by-valid-time",
    ),
    pytest.param(
        HAS_VERSION,
        [claim("a", "2.0.0", began=5, recorded=9), claim("b", "3.0.0", began=5, recorded=1)],
        (
            "policy",
            [("2.0.0", "unresolved", ("a",)), ("3.0.0", "unresolved", ("b",))],
            [],
            ("contradiction", ("a", "b")),
        ),
        id="supersede-tie-on-valid-time-is-left-for-review",
    ),
    pytest.param(
        OWNED_BY,
        [V2, V3],
        (
            "policy",
            [("2.0.0", "unresolved", ("a",)), ("3.0.0", "unresolved", ("b",))],
            [],
            ("contradiction", ("a", "b")),
        ),
        id="review-keeps-the-conflict-for-a-human",
    ),
    pytest.param(
        HAS_VERSION,
        [claim("a", "2.0.0", began=20, epistemic="commitment", source="decision-record"), V3],
        (
            "policy",
            [("2.0.0", "unresolved", ("a",)), ("3.0.0", "unresolved", ("b",))],
            [],
            ("commitment", ("a", "b")),
        ),
        id="supersede-never-overrules-a-commitment",
    ),
    pytest.param(
        HAS_VERSION,
        [V2, claim("b", "3.0.0", began=5, source="agent-note")],
        (
            "policy",
            [("2.0.0", "unresolved", ("a",)), ("3.0.0", "unresolved", ("b",))],
            [],
            ("outranked", ("a", "b")),
        ),
        id="supersede-never-by-a-less-trusted-source",
    ),
]

VERDICTS = [
    pytest.param(
        HAS_VERSION,
        "corroborate",
        None,
        ("adjudicator", [("2.0.0", "current", ("a", "b"))], [], None),
        id="corroborate-merges-without-closing",
    ),
    pytest.param(
        HAS_VERSION,
        "corroborate",
        "b",
        ("adjudicator", [("3.0.0", "current", ("a", "b"))], [], None),
        id="corroborate-into-the-named-winner",
    ),
    pytest.param(
        OWNED_BY,
        "single_winner",
        "a",
        (
            "adjudicator",
            [("2.0.0", "current", ("a",)), ("3.0.0", "superseded", ("b",))],
            [("b", "a")],
            None,
        ),
        id="single-winner-proposes-superseding-the-rest",
    ),
    pytest.param(
        HAS_VERSION,
        "coexist",
        None,
        ("adjudicator", [("2.0.0", "current", ("a",)), ("3.0.0", "current", ("b",))], [], None),
        id="coexist-keeps-all",
    ),
    pytest.param(
        LOCATED_IN,
        "supersede",
        None,
        (
            "adjudicator",
            [("3.0.0", "current", ("b",)), ("2.0.0", "superseded", ("a",))],
            [("a", "b")],
            None,
        ),
        id="supersede-verdict-keeps-the-newer",
    ),
    pytest.param(
        LOCATED_IN,
        "needs_review",
        None,
        (
            "adjudicator",
            [("2.0.0", "unresolved", ("a",)), ("3.0.0", "unresolved", ("b",))],
            [],
            ("contradiction", ("a", "b")),
        ),
        id="needs-review-leaves-it-for-a-human",
    ),
    pytest.param(
        HAS_VERSION,
        "supersede",
        "a",
        (
            "adjudicator",
            [("2.0.0", "unresolved", ("a",)), ("3.0.0", "unresolved", ("b",))],
            [],
            ("contradiction", ("a", "b")),
        ),
        id="supersede-by-an-older-value-is-not-proposed",
    ),
]


@pytest.mark.parametrize(("predicate", "claims", "expected"), DETECTION + POLICY)
def test_detection_and_policy(predicate, claims, expected):
    assert shape(decide_slot(claims, predicate, now=NOW)) == expected


@pytest.mark.parametrize(("predicate", "kind", "winner", "expected"), VERDICTS)
def test_usable_verdicts_decide_competing_values(predicate, kind, winner, expected):
    claims = [V2, V3]
    outcome = decide_slot(
        claims, predicate, verdict=verdict_for(claims, kind, winner=winner), now=NOW
    )
    assert shape(outcome) == expected
    assert outcome.rationale.startswith(f"adjudicator verdict {kind}")
    assert not outcome.competing


@pytest.mark.parametrize(
    ("verdict", "why"),
    [
        pytest.param(
            Verdict("coexist", 0.9, "x", claim_set_hash(["a", "zzz"])),
            "another claim set",
            id="about-another-claim-set",
        ),
        pytest.param(
            Verdict("single_winner", 0.9, "x", claim_set_hash(["a", "b"]), winner="zzz"),
            "not an undisputed value",
            id="winner-outside-the-slot",
        ),
    ],
)
def test_an_unusable_verdict_falls_back_to_the_policy(verdict, why):
    outcome = decide_slot([V2, V3], HAS_VERSION, verdict=verdict, now=NOW)
    assert outcome.decided_by == "policy"
    assert outcome.verdict is None
    assert why in outcome.rationale
    assert outcome.competing


def test_corroboration_merges_support_deduplicated_by_ref_and_quote():
    claims = [
        claim("a", "Fly", evidence=(("adr-7", "we moved"), ("log-1", ""))),
        claim("b", "fly", began=2, evidence=(("adr-7", "we moved"), ("adr-7", "to Fly"))),
    ]
    (value,) = decide_slot(claims, HAS_VERSION, now=NOW).values
    assert value.fact_ids == ("a", "b")
    assert [(e.ref, e.quote) for e in value.support] == [
        ("adr-7", "we moved"),
        ("log-1", ""),
        ("adr-7", "to Fly"),
    ]


def test_the_rationale_names_the_path_that_decided():
    assert decide_slot([V2], HAS_VERSION, now=NOW).rationale == "one value, held by 1 claim"
    assert decide_slot([V2, V3], LOCATED_IN, now=NOW).rationale.startswith(
        "predicate policy parallel"
    )


def test_a_single_winner_supersedes_now_and_a_supersede_verdict_where_the_winner_began():
    claims = [V2, V3]
    winner = decide_slot(
        claims, OWNED_BY, verdict=verdict_for(claims, "single_winner", winner="a"), now=NOW
    )
    assert [s.at for s in winner.supersessions] == [NOW]
    newer = decide_slot(claims, OWNED_BY, verdict=verdict_for(claims, "supersede"), now=NOW)
    assert [s.at for s in newer.supersessions] == [V3.t_valid]


def test_claim_set_hash_ignores_order_and_sees_every_member():
    assert claim_set_hash(["b", "a"]) == claim_set_hash(["a", "b"])
    assert claim_set_hash(["a", "b"]) != claim_set_hash(["a"])
    assert decide_slot([V2, V3], HAS_VERSION, now=NOW).claim_set_hash == claim_set_hash(["a", "b"])


@pytest.mark.parametrize(
    "changed",
    [
        PredicateSpec("core/has-version", "many", "observation", "supersede"),
        PredicateSpec("core/has-version", "one", "observation", "review"),
        PredicateSpec("core/has-version", "one", "observation", "supersede", "versions"),
        PredicateSpec("core/has-version", "one", "observation", "supersede", event_like=True),
    ],
)
def test_semantics_version_changes_with_every_rule_the_decision_uses(changed):
    assert semantics_version(changed) != semantics_version(HAS_VERSION)


def test_semantics_version_ignores_the_default_class():
    relabelled = PredicateSpec("core/has-version", "one", "preference", "supersede")
    assert semantics_version(relabelled) == semantics_version(HAS_VERSION)


# --- what truth maintenance acts on ------------------------------------------------------

A = "00000000-0000-0000-0000-00000000000a"
B = "00000000-0000-0000-0000-00000000000b"
C1 = "c1"


def pair(**extra):
    return [claim(A, "2.0.0", began=20, **extra), claim(B, "3.0.0", began=5, **extra)]


def settled(claims, predicate, *, verdict=None, awaiting=False):
    outcome = decide_slot(claims, predicate, verdict=verdict, now=NOW)
    return settle(outcome, claims, min_confidence=0.9, awaiting_verdict=awaiting)


def test_settle_acts_on_a_policy_supersession_as_decided():
    claims = pair()
    outcome = decide_slot(claims, HAS_VERSION, now=NOW)
    assert settle(outcome, claims, min_confidence=0.9, awaiting_verdict=False) is outcome


def test_settle_acts_on_nothing_while_a_verdict_is_awaited():
    outcome = settled(pair(), HAS_VERSION, awaiting=True)
    assert (outcome.supersessions, outcome.conflict) == ((), None)
    assert {value.status for value in outcome.values} == {"unresolved"}


@pytest.mark.parametrize(
    ("kind", "winner", "confidence"),
    [
        pytest.param("single_winner", A, 1.0, id="a-contradiction-never"),
        pytest.param("supersede", None, 0.89, id="supersede-below-the-bar"),
        pytest.param("corroborate", None, 0.5, id="corroborate-below-the-bar"),
    ],
)
def test_settle_leaves_what_may_act_refuses_for_a_human(kind, winner, confidence):
    claims = pair()
    verdict = verdict_for(claims, kind, winner=winner, confidence=confidence)
    outcome = settled(claims, OWNED_BY, verdict=verdict)
    assert outcome.supersessions == ()
    assert outcome.conflict is not None and set(outcome.conflict.fact_ids) == {A, B}
    assert {value.status for value in outcome.values} == {"unresolved"}
    assert "not acted on" in outcome.rationale


def test_settle_never_overrides_a_ruling_and_opens_no_conflict_for_ruled_values():
    ruled = pair(ruled_conflicts=frozenset({C1}))
    for predicate in (HAS_VERSION, OWNED_BY):
        outcome = settled(ruled, predicate)
        assert (outcome.supersessions, outcome.conflict) == ((), None)
        assert {value.status for value in outcome.values} == {"current"}
        assert "a steward already ruled" in outcome.rationale


@pytest.mark.parametrize("verdict", [None, "supersede"])
def test_settle_leaves_claims_a_human_ruled_on_since_they_were_recorded_for_a_human(verdict):
    """A revert put 2.0.0 back beside 3.0.0 a day ago: neither policy nor verdict supersedes."""
    claims = [claim(A, "2.0.0", began=20, ruled=1), claim(B, "3.0.0", began=5)]
    given = verdict_for(claims, verdict, confidence=0.95) if verdict else None
    outcome = settled(claims, HAS_VERSION, verdict=given)
    assert outcome.supersessions == ()
    assert outcome.conflict is not None and set(outcome.conflict.fact_ids) == {A, B}
    assert {value.status for value in outcome.values} == {"unresolved"}
    assert "a human ruled on these claims since they were recorded" in outcome.rationale
    # Already sharing a conflict (the revert's), they get no second one.
    shared = [
        claim(A, "2.0.0", began=20, ruled=1, open_conflicts=frozenset({C1})),
        claim(B, "3.0.0", began=5, open_conflicts=frozenset({C1})),
    ]
    assert settled(shared, HAS_VERSION).conflict is None


def test_a_supersession_after_an_older_ruling_closes_no_earlier_than_that_ruling():
    """3.0.0 recorded today but valid from 5 days ago; a human ruled on 2.0.0 2 days ago."""
    claims = [claim(A, "2.0.0", began=20, ruled=2), claim(B, "3.0.0", began=5, recorded=0)]
    [supersession] = settled(claims, HAS_VERSION).supersessions
    assert (supersession.fact_id, supersession.by) == (A, B)
    assert supersession.at == NOW - 2 * DAY  # not NOW - 5 days, where 3.0.0 began


def test_settle_opens_no_second_conflict_between_claims_that_share_one():
    outcome = settled(pair(open_conflicts=frozenset({C1})), OWNED_BY)
    assert outcome.conflict is None
    assert {value.status for value in outcome.values} == {"unresolved"}


def test_truth_effects_name_the_rule_and_give_the_rationale_as_reason():
    claims = pair()
    supersede = decide_slot(claims, HAS_VERSION, now=NOW)
    ids = {"scope_id": 1, "subject_id": 2, "predicate_id": 3, "now": NOW}
    conflict_id = UUID(int=9)
    effects = truth_effects(supersede, policy="supersede", conflict_id=conflict_id, **ids)
    close, note = effects.changes
    assert (close.fact_id, close.superseded_by, close.at, close.kind) == (
        UUID(A),
        UUID(B),
        claims[1].t_valid,
        "superseded",
    )
    assert (note.rule, note.reason, note.actor_id) == (
        "truth: policy: supersede",
        supersede.rationale,
        None,
    )
    assert effects.check_moot == (UUID(A),)

    review = decide_slot(claims, OWNED_BY, now=NOW)
    opened, note = truth_effects(review, policy="review", conflict_id=conflict_id, **ids).changes
    assert opened.id == conflict_id
    assert {(m.role, m.disputes) for m in opened.members} == {("existing", True)}
    assert note.rule == "truth: policy: review"

    verdict = verdict_for(claims, "needs_review")
    advised = decide_slot(claims, OWNED_BY, verdict=verdict, now=NOW)
    (_, note) = truth_effects(advised, policy="review", conflict_id=conflict_id, **ids).changes
    assert note.rule == "truth: adjudicator: needs_review"
