"""The pure decision function: tables of data in, decisions out. No database."""

from datetime import UTC, datetime, timedelta

import pytest

from memories.core.decisions import (
    DEFAULT_CONFIDENCE,
    Evidence,
    Incoming,
    PredicateSpec,
    Rejected,
    SourceSpec,
    StandingFact,
    Vocabulary,
    birth_confidence,
    conflict_is_moot,
    decide,
    merge_evidence,
    parse_assertion,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
EARLIER = NOW - timedelta(days=30)
MUCH_EARLIER = NOW - timedelta(days=300)

VOCABULARY = Vocabulary(
    predicates={
        "core/prefers": PredicateSpec("core/prefers", "many", "preference", "parallel", "stance"),
        "core/decided-against": PredicateSpec(
            "core/decided-against", "many", "commitment", "parallel", "stance"
        ),
        "core/avoids": PredicateSpec("core/avoids", "many", "preference", "parallel", "stance"),
        "core/has-version": PredicateSpec("core/has-version", "one", "observation", "supersede"),
        "core/deployed-via": PredicateSpec("core/deployed-via", "many", "observation", "parallel"),
        "core/owned-by": PredicateSpec("core/owned-by", "one", "observation", "review"),
        "core/located-in": PredicateSpec("core/located-in", "one", "observation", "parallel"),
        "core/released": PredicateSpec(
            "core/released", "one", "observation", "supersede", event_like=True
        ),
    },
    sources={
        "decision-record": SourceSpec("decision-record", 3, 1.0, decays=False),
        "code": SourceSpec("code", 3, 0.95),
        "user-assertion": SourceSpec("user-assertion", 3, 0.9),
        "session-log": SourceSpec("session-log", 2, 0.7),
        "agent-note": SourceSpec("agent-note", 1, 0.65),
    },
)


def incoming(
    predicate="core/has-version",
    value="2.0.0",
    *,
    source="code",
    epistemic=None,
    confidence=DEFAULT_CONFIDENCE,
    t_valid=NOW,
    t_invalid=None,
    evidence=(),
    by_steward=False,
) -> Incoming:
    spec = VOCABULARY.predicates[predicate]
    return Incoming(
        predicate=predicate,
        object_kind="literal",
        object_key=value,
        epistemic=epistemic or spec.default_epistemic,
        epistemic_stated=epistemic is not None,
        source_type=source,
        confidence=confidence,
        t_valid=t_valid,
        t_invalid=t_invalid,
        evidence=tuple(evidence),
        by_steward=by_steward,
    )


def standing(
    fact_id,
    predicate="core/has-version",
    value="2.0.0",
    *,
    source="code",
    epistemic=None,
    confidence=0.8,
    t_valid=EARLIER,
    t_invalid=None,
    evidence=(),
    candidate=False,
) -> StandingFact:
    return StandingFact(
        id=fact_id,
        predicate=predicate,
        object_kind="literal",
        object_key=value,
        epistemic=epistemic or VOCABULARY.predicates[predicate].default_epistemic,
        source_type=source,
        confidence=confidence,
        t_valid=t_valid,
        t_invalid=t_invalid,
        evidence=tuple(evidence),
        candidate=candidate,
    )


def run(new: Incoming, *facts: StandingFact):
    return decide(new, facts, VOCABULARY, now=NOW, trusted_rank=3)


# Each row: what stands, what comes in, and the expected (status, reason,
# candidates, superseded). The rows follow SPEC §2's precedence order.
BRANCHES = [
    pytest.param(
        [],
        incoming(),
        ("created", None, (), ()),
        id="nothing-stands-created",
    ),
    pytest.param(
        [standing("a", confidence=0.8)],
        incoming(confidence=0.6),
        ("reinforced", None, (), ()),
        id="duplicate-reinforces",
    ),
    pytest.param(
        [standing("a", epistemic="observation")],
        incoming(epistemic="commitment"),
        ("superseded", None, (), ("a",)),
        id="escalation-stated-class-binds-harder",
    ),
    pytest.param(
        [standing("a", epistemic="commitment")],
        incoming(epistemic="observation"),
        ("reinforced", None, (), ()),
        id="weaker-stated-class-only-reinforces",
    ),
    pytest.param(
        [
            standing(
                "a", predicate="core/decided-against", value="GraphQL", source="decision-record"
            )
        ],
        incoming("core/prefers", "GraphQL", source="session-log"),
        ("flagged", "commitment", ("a",), ()),
        id="commitment-standing-in-exclusion-group",
    ),
    pytest.param(
        [standing("a", value="2.0.0", source="agent-note")],
        incoming(value="3.0.0", source="agent-note", epistemic="commitment"),
        ("flagged", "commitment", ("a",), ()),
        id="commitment-arriving-against-an-observation",
    ),
    pytest.param(
        [standing("a", value="2.0.0", source="agent-note", epistemic="commitment")],
        incoming(value="3.0.0", source="code", t_valid=MUCH_EARLIER),
        ("flagged", "commitment", ("a",), ()),
        id="commitment-wins-over-backdated",
    ),
    pytest.param(
        [standing("a", value="2.0.0", t_valid=EARLIER)],
        incoming(value="1.0.0", t_valid=MUCH_EARLIER),
        ("flagged", "backdated", ("a",), ()),
        id="backdated",
    ),
    pytest.param(
        [standing("a", value="2.0.0", t_valid=EARLIER)],
        incoming(value="1.0.0", t_valid=EARLIER),
        ("flagged", "backdated", ("a",), ()),
        id="same-start-counts-as-backdated",
    ),
    pytest.param(
        [standing("a", value="2.0.0", source="user-assertion", t_valid=EARLIER)],
        incoming(value="1.0.0", source="agent-note", t_valid=MUCH_EARLIER),
        ("flagged", "backdated", ("a",), ()),
        id="backdated-checked-before-outranked",
    ),
    pytest.param(
        [standing("a", value="2.0.0", source="code")],
        incoming(value="3.0.0", source="agent-note"),
        ("flagged", "outranked", ("a",), ()),
        id="outranked",
    ),
    pytest.param(
        [standing("a", value="2.0.0", source="code")],
        incoming(value="2.1.0", source="code"),
        ("superseded", None, (), ("a",)),
        id="one-predicate-same-rank-supersedes",
    ),
    pytest.param(
        [standing("a", value="2.0.0", source="agent-note")],
        incoming(value="2.1.0", source="code"),
        ("superseded", None, (), ("a",)),
        id="higher-rank-supersedes",
    ),
    pytest.param(
        [standing("a", predicate="core/prefers", value="GraphQL", source="user-assertion")],
        incoming("core/avoids", "GraphQL", source="user-assertion"),
        ("superseded", None, (), ("a",)),
        id="exclusion-group-supersedes-despite-parallel-policy",
    ),
    pytest.param(
        [standing("a", predicate="core/prefers", value="REST")],
        incoming("core/avoids", "GraphQL"),
        ("created", None, (), ()),
        id="exclusion-group-other-object-does-not-collide",
    ),
    pytest.param(
        [standing("a", predicate="core/owned-by", value="team-a")],
        incoming("core/owned-by", "team-b"),
        ("flagged", "contradiction", ("a",), ()),
        id="review-policy-flags-contradiction",
    ),
    pytest.param(
        [standing("a", predicate="core/located-in", value="berlin")],
        incoming("core/located-in", "paris"),
        ("created", None, (), ()),
        id="parallel-policy-on-one-predicate-coexists",
    ),
    pytest.param(
        [standing("a", predicate="core/released", value="v1")],
        incoming("core/released", "v2"),
        ("created", None, (), ()),
        id="event-like-never-conflicts-across-objects",
    ),
    pytest.param(
        [
            standing(
                "dead", "core/deployed-via", "heroku", source="user-assertion", t_invalid=EARLIER
            ),
            standing("fly", "core/deployed-via", "fly", source="user-assertion"),
        ],
        incoming("core/deployed-via", "heroku", source="agent-note"),
        ("flagged", "revenant", ("fly",), ()),
        id="revenant-with-live-rival",
    ),
    pytest.param(
        [standing("dead", "core/deployed-via", "heroku", t_invalid=EARLIER)],
        incoming("core/deployed-via", "heroku", source="agent-note"),
        ("created", None, (), ()),
        id="revenant-without-live-rival-is-created",
    ),
    pytest.param(
        [
            standing("dead", "core/deployed-via", "heroku", t_invalid=EARLIER),
            standing("fly", "core/deployed-via", "fly"),
        ],
        incoming("core/deployed-via", "heroku", source="user-assertion"),
        ("created", None, (), ()),
        id="revenant-from-trusted-source-is-created",
    ),
    pytest.param(
        [standing("fly", "core/deployed-via", "fly")],
        incoming("core/deployed-via", "render", source="agent-note"),
        ("created", None, (), ()),
        id="new-value-on-many-predicate-coexists",
    ),
    pytest.param(
        [standing("a", value="2.0.0")],
        incoming(value="3.0.0", t_valid=MUCH_EARLIER, t_invalid=EARLIER - timedelta(days=1)),
        ("created", None, (), ()),
        id="closed-interval-is-history-and-collides-with-nothing",
    ),
]


@pytest.mark.parametrize(("facts", "new", "expected"), BRANCHES)
def test_decision_branches(facts, new, expected):
    decision = run(new, *facts)
    status, reason, candidates, superseded = expected
    assert (decision.status, decision.reason) == (status, reason)
    assert decision.candidates == candidates
    assert decision.supersedes == superseded


# Issue 29 item 8: an unadmitted candidate never blocks a steward's write. A
# steward's write weighs only admitted facts under the commitment rule; the
# candidate then meets the rules after it as an ordinary fact of its source.
# Everyone else's write weighs candidates as before (acceptance example 1).
CANDIDATE_COMMITMENT = standing(
    "adr",
    "core/decided-against",
    "GraphQL",
    source="decision-record",
    epistemic="commitment",
    candidate=True,
)
ADMITTED_COMMITMENT = standing(
    "adr", "core/decided-against", "GraphQL", source="decision-record", epistemic="commitment"
)
STEWARD_BRANCHES = [
    pytest.param(
        [CANDIDATE_COMMITMENT],
        incoming("core/prefers", "GraphQL", source="code", by_steward=True),
        ("superseded", None, (), ("adr",)),
        id="stewards-write-supersedes-a-candidate-commitment-in-an-exclusion-group",
    ),
    pytest.param(
        [standing("v2", value="2.0.0", epistemic="commitment", candidate=True)],
        incoming(value="3.0.0", source="code", by_steward=True),
        ("superseded", None, (), ("v2",)),
        id="stewards-write-supersedes-a-candidate-commitment-on-a-one-predicate",
    ),
    pytest.param(
        [standing("v2", value="2.0.0", source="agent-note", candidate=True)],
        incoming(value="3.0.0", source="code", epistemic="commitment", by_steward=True),
        ("superseded", None, (), ("v2",)),
        id="stewards-commitment-supersedes-a-candidate-observation",
    ),
    pytest.param(
        [ADMITTED_COMMITMENT],
        incoming("core/prefers", "GraphQL", source="code", by_steward=True),
        ("flagged", "commitment", ("adr",), ()),
        id="an-admitted-commitment-still-flags-a-stewards-write",
    ),
    pytest.param(
        [standing("v2", value="2.0.0", source="agent-note")],
        incoming(value="3.0.0", source="code", epistemic="commitment", by_steward=True),
        ("flagged", "commitment", ("v2",), ()),
        id="a-stewards-commitment-still-flags-against-an-admitted-fact",
    ),
    pytest.param(
        [CANDIDATE_COMMITMENT, standing("pref", "core/avoids", "GraphQL")],
        incoming("core/prefers", "GraphQL", source="code", by_steward=True),
        ("superseded", None, (), ("adr", "pref")),
        id="candidate-commitment-beside-an-admitted-preference-supersedes-both",
    ),
    pytest.param(
        [CANDIDATE_COMMITMENT],
        incoming("core/prefers", "GraphQL", source="session-log"),
        ("flagged", "commitment", ("adr",), ()),
        id="a-members-write-is-still-held-by-a-candidate-commitment",
    ),
    pytest.param(
        [standing("v2", value="2.0.0", epistemic="commitment", t_valid=NOW, candidate=True)],
        incoming(value="3.0.0", source="code", t_valid=EARLIER, by_steward=True),
        ("flagged", "backdated", ("v2",), ()),
        id="stewards-write-meets-a-candidate-by-the-later-rules-backdated",
    ),
    pytest.param(
        [standing("v2", value="2.0.0", source="decision-record", candidate=True)],
        incoming(value="3.0.0", source="agent-note", by_steward=True),
        ("flagged", "outranked", ("v2",), ()),
        id="stewards-write-meets-a-candidate-by-the-later-rules-outranked",
    ),
    pytest.param(
        [standing("o", "core/owned-by", "team-a", epistemic="commitment", candidate=True)],
        incoming("core/owned-by", "team-b", by_steward=True),
        ("flagged", "contradiction", ("o",), ()),
        id="stewards-write-meets-a-candidate-by-the-later-rules-review",
    ),
]


@pytest.mark.parametrize(("facts", "new", "expected"), STEWARD_BRANCHES)
def test_a_candidate_never_holds_up_a_stewards_write(facts, new, expected):
    decision = run(new, *facts)
    status, reason, candidates, superseded = expected
    assert (decision.status, decision.reason) == (status, reason)
    assert decision.candidates == candidates
    assert decision.supersedes == superseded


@pytest.mark.parametrize(
    ("requested", "source", "born"),
    [
        (0.99, "session-log", 0.7),
        (0.8, "agent-note", 0.65),
        (0.5, "agent-note", 0.5),
        (1.7, "decision-record", 1.0),
        (-0.3, "code", 0.0),
    ],
)
def test_birth_confidence_is_clamped_then_capped_by_the_ceiling(requested, source, born):
    decision = run(incoming(source=source, confidence=requested))
    assert decision.confidence == pytest.approx(born)
    assert birth_confidence(requested, VOCABULARY.sources[source].confidence_ceiling) == born


@pytest.mark.parametrize(
    ("standing_source", "standing_confidence", "incoming_source", "incoming_confidence", "after"),
    [
        # Reinforcement is a high-water mark capped by the ceiling.
        ("user-assertion", 0.8, "user-assertion", 0.6, ("user-assertion", 0.8)),
        ("user-assertion", 0.8, "user-assertion", 0.95, ("user-assertion", 0.9)),
        # A strictly higher ceiling re-sources the fact and lifts its band.
        ("session-log", 0.7, "user-assertion", 0.9, ("user-assertion", 0.9)),
        # A tie never re-sources.
        ("session-log", 0.6, "failure-report", 0.7, ("session-log", 0.7)),
        # A weaker source cannot lift a fact above what it could assert itself.
        ("code", 0.5, "agent-note", 0.9, ("code", 0.65)),
    ],
)
def test_reinforcement_resourcing_and_high_water_mark(
    standing_source, standing_confidence, incoming_source, incoming_confidence, after
):
    vocabulary = Vocabulary(
        predicates=VOCABULARY.predicates,
        sources={**VOCABULARY.sources, "failure-report": SourceSpec("failure-report", 2, 0.7)},
    )
    decision = decide(
        incoming(source=incoming_source, confidence=incoming_confidence),
        [standing("a", source=standing_source, confidence=standing_confidence)],
        vocabulary,
        now=NOW,
        trusted_rank=3,
    )
    assert decision.status == "reinforced"
    result = decision.reinforcement
    assert (result.source_type, result.confidence) == (after[0], pytest.approx(after[1]))
    assert result.resourced == (after[0] != standing_source)


def test_reinforcement_merges_evidence_without_duplicates():
    old = (Evidence("adr-7", "we chose trunk"), Evidence("wiki"))
    new = (Evidence("wiki"), Evidence("adr-7", "we chose trunk"), Evidence("chat-12", "yes"))
    decision = run(incoming(evidence=new), standing("a", evidence=old))
    assert decision.reinforcement.evidence == (*old, Evidence("chat-12", "yes"))
    assert merge_evidence((), new) == new


def test_default_class_never_escalates():
    # decided-against defaults to commitment; an observation standing with the
    # same value is reinforced when the class was not stated.
    fact = standing("a", "core/decided-against", "GraphQL", epistemic="observation")
    assert run(incoming("core/decided-against", "GraphQL"), fact).status == "reinforced"


def test_escalation_dated_before_the_standing_fact_is_flagged_backdated():
    fact = standing("a", t_valid=NOW)
    decision = run(incoming(epistemic="commitment", t_valid=EARLIER), fact)
    assert (decision.status, decision.reason) == ("flagged", "backdated")


def test_invalidated_duplicate_does_not_reinforce():
    dead = standing("a", t_invalid=EARLIER + timedelta(days=1))
    assert run(incoming(), dead).status == "created"


def test_supersession_closes_every_colliding_fact():
    facts = [standing("a", value="1.0"), standing("b", value="1.1", t_valid=EARLIER)]
    decision = run(incoming(value="2.0"), *facts)
    assert decision.status == "superseded"
    assert set(decision.supersedes) == {"a", "b"}


# --- parse_assertion (rule 1) ---------------------------------------------------

VALID = {
    "scope": "project",
    "subject": "AuthService",
    "predicate": "core/has-version",
    "object": "2.0.0",
    "source_type": "code",
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"predicate": "core/likes"}, "predicate"),
        ({"source_type": "rumour"}, "source_type"),
        ({"epistemic": "belief"}, "epistemic"),
        ({"subject": "   "}, "subject"),
        ({"object": ""}, "object"),
        ({"object": None}, "object"),
        ({"confidence": float("nan")}, "confidence"),
        ({"confidence": float("inf")}, "confidence"),
        ({"confidence": "0.9"}, "confidence"),
        ({"confidence": True}, "confidence"),
        ({"object": "x" * 2001}, "object"),
        ({"t_valid": "last tuesday"}, "t_valid"),
        ({"t_invalid": "2026-13-01"}, "t_invalid"),
        ({"t_valid": "0001-01-01T00:00:00+05:00"}, "t_valid"),
        ({"t_valid": "2026-05-01T00:00:00Z", "t_invalid": "2026-04-01T00:00:00Z"}, "t_invalid"),
        ({"t_valid": "2026-05-01T00:00:00Z", "t_invalid": "2026-05-01T00:00:00Z"}, "t_invalid"),
        ({"t_invalid": "2020-01-01T00:00:00Z"}, "t_invalid"),
        ({"object_kind": "number"}, "object_kind"),
        ({"bucket": "team"}, "bucket"),
        ({"evidence": "see the ADR"}, "evidence"),
        ({"evidence": [{"quote": "no ref"}]}, "evidence"),
        ({"subject": "nul\x00byte"}, "subject"),
        ({"admission": "admitted"}, "admission"),
        ({"scope": 7}, "scope"),
    ],
)
def test_bad_input_is_rejected_naming_the_field(change, field):
    with pytest.raises(Rejected) as refused:
        parse_assertion({**VALID, **change}, VOCABULARY, now=NOW)
    assert refused.value.field == field
    assert refused.value.message


def test_missing_source_type_is_rejected():
    raw = {key: value for key, value in VALID.items() if key != "source_type"}
    with pytest.raises(Rejected, match="source_type: is required"):
        parse_assertion(raw, VOCABULARY, now=NOW)


def test_valid_assertion_gets_defaults():
    assertion = parse_assertion(VALID, VOCABULARY, now=NOW)
    assert assertion.confidence == DEFAULT_CONFIDENCE
    assert assertion.epistemic == "observation"
    assert assertion.epistemic_stated is False
    assert assertion.bucket == "system"
    assert assertion.object_kind == "literal"
    assert assertion.t_valid is None


def test_times_without_offset_are_utc():
    assertion = parse_assertion({**VALID, "t_valid": "2026-01-01T10:00"}, VOCABULARY, now=NOW)
    assert assertion.t_valid == datetime(2026, 1, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("members", "moot"),
    [
        ([("incoming", True), ("existing", True)], False),
        ([("incoming", False), ("existing", True)], True),
        ([("incoming", True), ("existing", False)], True),
        ([("incoming", True), ("existing", False), ("existing", True)], False),
        ([("existing", True), ("existing", True)], False),
        ([("existing", True), ("existing", False)], True),
    ],
)
def test_conflict_closes_when_a_side_is_gone(members, moot):
    assert conflict_is_moot(members) is moot


def test_a_predicate_collides_with_its_whole_exclusion_group_in_name_order():
    # Asked for every imported line of a group: found once per vocabulary, so
    # each answer must still be the group's members, sorted, and only them.
    for name in ("core/prefers", "core/avoids", "core/decided-against"):
        assert VOCABULARY.slot_predicates(name) == (
            "core/avoids",
            "core/decided-against",
            "core/prefers",
        )
    assert VOCABULARY.slot_predicates("core/has-version") == ("core/has-version",)


# The spellings of "PaySvc" and "2.1.0" that render like them but are other text
# (issue 29 item 4): invisible, direction-changing and glyph-changing characters.
HIDDEN = [
    "Pay\u200bSvc",  # zero-width space
    "\ufeffPaySvc",  # byte-order mark
    "Pay\u200dSvc",  # zero-width joiner
    "Pay\u2060Svc",  # word joiner
    "Pay\u00adSvc",  # soft hyphen
    "\u202ePaySvc",  # right-to-left override
    "\u2066PaySvc\u2069",  # left-to-right isolate
    "Pay\u200eSvc",  # left-to-right mark
    "Pay\U000e0041Svc",  # tag character
    "Pay\ufe0fSvc",  # variation selector
    "Pay\U000e0100Svc",  # variation selector supplement
    "Pay\x07Svc",  # a control character
]


@pytest.mark.parametrize("spelling", HIDDEN)
@pytest.mark.parametrize("field", ["subject", "object"])
def test_a_name_or_value_hiding_a_character_is_refused_naming_it(spelling, field):
    with pytest.raises(Rejected) as refused:
        parse_assertion({**VALID, field: spelling}, VOCABULARY, now=NOW)
    assert refused.value.field == field
    assert "U+" in refused.value.message


def test_a_reversed_value_is_refused():
    with pytest.raises(Rejected, match="RIGHT-TO-LEFT OVERRIDE"):
        parse_assertion({**VALID, "object": "\u202e0.1.2"}, VOCABULARY, now=NOW)


def test_names_and_values_are_stored_in_nfkc():
    assertion = parse_assertion(
        {**VALID, "subject": "\uff30\uff41\uff59\uff33\uff56\uff43", "object": "\uff12.\ufb01"},
        VOCABULARY,
        now=NOW,
    )
    assert assertion.subject == "PaySvc"
    assert assertion.object == "2.fi"


def test_a_literal_may_span_lines_but_a_name_may_not():
    assertion = parse_assertion({**VALID, "object": "line one\nline two"}, VOCABULARY, now=NOW)
    assert assertion.object == "line one\nline two"
    with pytest.raises(Rejected, match="control character"):
        parse_assertion({**VALID, "subject": "Pay\nSvc"}, VOCABULARY, now=NOW)
