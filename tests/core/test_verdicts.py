"""Adjudicator verdicts: strict reading, and the one rule for acting on them. No database."""

import json

import pytest

from memories.core.verdicts import (
    SemanticsProposal,
    UnusableVerdict,
    Verdict,
    may_act,
    parse_verdict,
)

LABELS = {"c1": "fact-1", "c2": "fact-2"}


def answer(**fields) -> str:
    return json.dumps({"verdict": "supersede", "confidence": 0.9, "rationale": "newer"} | fields)


def verdict(kind: str, confidence: float) -> Verdict:
    return Verdict(kind=kind, confidence=confidence, rationale="r", claim_set_hash="h")


@pytest.mark.parametrize(
    ("kind", "confidence", "conflict_kind", "acts"),
    [
        pytest.param("corroborate", 0.95, None, True, id="confident-corroborate-acts"),
        pytest.param("supersede", 0.9, None, True, id="supersede-at-the-threshold-acts"),
        pytest.param("supersede", 0.89, None, False, id="below-the-threshold-does-not"),
        pytest.param("single_winner", 1.0, None, False, id="a-contradiction-never-at-1.0"),
        pytest.param("coexist", 1.0, None, False, id="coexist-is-not-a-resolution"),
        pytest.param("needs_review", 1.0, None, False, id="needs-review-never"),
        pytest.param("supersede", 1.0, "commitment", False, id="never-on-a-commitment-conflict"),
        pytest.param("corroborate", 1.0, "outranked", False, id="never-on-an-outranked-conflict"),
        pytest.param("supersede", 1.0, "revenant", False, id="never-on-a-revenant-conflict"),
        pytest.param("supersede", 1.0, "reverted", False, id="never-on-a-stewards-revert"),
        pytest.param("supersede", 1.0, "crawler", True, id="a-crawler-conflict-may-be-acted-on"),
        pytest.param("supersede", float("nan"), None, False, id="nan-is-no-confidence"),
    ],
)
def test_may_act(kind, confidence, conflict_kind, acts):
    assert may_act(verdict(kind, confidence), 0.9, conflict_kind=conflict_kind) is acts


def test_may_act_without_a_verdict_is_no():
    assert may_act(None, 0.5) is False


@pytest.mark.parametrize("threshold", [-0.1, 1.1, float("nan"), True])
def test_may_act_refuses_a_threshold_outside_the_unit_interval(threshold):
    with pytest.raises(ValueError, match="min_confidence"):
        may_act(verdict("supersede", 1.0), threshold)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(answer(), ("supersede", 0.9, None), id="supersede-without-winner"),
        pytest.param(answer(winner="c2"), ("supersede", 0.9, "fact-2"), id="winner-label-to-id"),
        pytest.param(
            answer(verdict="single_winner", winner="c1", confidence=1),
            ("single_winner", 1.0, "fact-1"),
            id="single-winner-with-its-winner",
        ),
        pytest.param(
            "  \n" + answer(verdict="needs_review", confidence=0) + "\n",
            ("needs_review", 0.0, None),
            id="surrounding-whitespace-is-fine",
        ),
    ],
)
def test_parse_reads_a_valid_answer(content, expected):
    parsed = parse_verdict(content, labels=LABELS, claim_set_hash="h", model="m")
    v = parsed.verdict
    assert (v.kind, v.confidence, v.winner) == expected
    assert (v.claim_set_hash, v.model) == ("h", "m")
    assert parsed.proposal is None


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param("the newer one wins", "not JSON", id="prose"),
        pytest.param("```json\n" + answer() + "\n```", "not JSON", id="a-fenced-block"),
        pytest.param("[1, 2]", "not a JSON object", id="a-list"),
        pytest.param(answer(verdict="contradicts"), "unknown verdict", id="unknown-verdict"),
        pytest.param(answer(confidence=1.5), "confidence", id="confidence-above-one"),
        pytest.param(answer(confidence="high"), "confidence", id="confidence-as-text"),
        pytest.param(answer(confidence=True), "confidence", id="confidence-as-boolean"),
        pytest.param(answer(rationale=" "), "rationale", id="empty-rationale"),
        pytest.param(answer(winner="c9"), "not one of the claims", id="winner-not-shown"),
        pytest.param(answer(verdict="single_winner"), "must name", id="single-winner-no-winner"),
        pytest.param(
            answer(verdict="coexist", winner="c1"), "names no winner", id="coexist-winner"
        ),
        pytest.param(answer(note="extra"), "unknown key", id="an-unknown-key"),
        pytest.param(answer(semantics={"cardinality": "few"}), "cardinality", id="bad-semantics"),
        pytest.param(answer(semantics="one"), "semantics", id="semantics-not-an-object"),
    ],
)
def test_parse_rejects_anything_else(content, reason):
    with pytest.raises(UnusableVerdict, match=reason):
        parse_verdict(content, labels=LABELS, claim_set_hash="h")


def test_parse_reads_a_semantics_proposal():
    content = answer(semantics={"cardinality": "many", "event_like": False, "rationale": "roles"})
    parsed = parse_verdict(content, labels=LABELS, claim_set_hash="h")
    assert parsed.proposal == SemanticsProposal(
        cardinality="many", event_like=False, rationale="roles"
    )
