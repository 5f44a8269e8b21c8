"""The one rule of text PostgreSQL cannot store, and the parser of assertions keeping it."""

import pytest

from memories.core.decisions import (
    Rejected,
    check_text,
    parse_assertion,
    parse_evidence,
    parse_time,
    unstorable,
)
from tests.memories.test_decisions import NOW, VALID, VOCABULARY


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", None),
        ("AuthService 2.0.0", None),
        ("Grüße, 東京, 🚀", None),  # an astral character is a proper pair, not a surrogate
        ("\ufffd", None),
        ("x\x00y", "NUL"),
        ("\x00", "NUL"),
        ("x\ud800y", "lone surrogate"),
        ("\udfff", "lone surrogate"),
        ("é\udc00", "lone surrogate"),
        ("\ud83d\ude80", "lone surrogate"),  # two halves in a Python str are still two halves
    ],
)
def test_text_the_database_cannot_store_is_named_for_what_it_holds(text, problem):
    found = unstorable(text)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_check_text_refuses_by_field_and_then_by_length():
    with pytest.raises(Rejected) as refused:
        check_text("x\ud800" * 10, "statement", 5)
    assert refused.value.field == "statement" and "surrogate" in refused.value.message
    with pytest.raises(Rejected, match="longer than 5"):
        check_text("x" * 6, "statement", 5)


@pytest.mark.parametrize(
    "field", ["scope", "subject", "predicate", "object", "source_type", "episode", "statement"]
)
@pytest.mark.parametrize("bad", ["\ud800", "\x00"])
def test_parse_assertion_refuses_unstorable_text_in_every_text_field(field, bad):
    with pytest.raises(Rejected) as refused:
        parse_assertion({**VALID, field: f"x{bad}y"}, VOCABULARY, now=NOW)
    assert refused.value.field == field


@pytest.mark.parametrize(
    "evidence",
    [["x\ud800"], [{"ref": "\udfff"}], [{"ref": "ADR-7", "quote": "a\ud800b"}], ["a\x00"]],
)
def test_parse_assertion_refuses_unstorable_evidence(evidence):
    with pytest.raises(Rejected) as refused:
        parse_assertion({**VALID, "evidence": evidence}, VOCABULARY, now=NOW)
    assert refused.value.field == "evidence"
    with pytest.raises(Rejected):
        parse_evidence(evidence, "evidence")


@pytest.mark.parametrize("field", ["t_valid", "t_invalid"])
@pytest.mark.parametrize("value", ["\x00", "2026-01-01T00:00:00Z\x00", "2026-01-01\ud800"])
def test_a_time_holding_unstorable_text_is_refused_never_read_around(field, value):
    # datetime.fromisoformat stops reading at a NUL: "2026-01-01T00:00:00Z\x00" parsed.
    with pytest.raises(Rejected) as refused:
        parse_time(value, field)
    assert refused.value.field == field


def test_an_unknown_key_that_is_not_text_is_named_by_its_escape():
    with pytest.raises(Rejected) as refused:
        parse_assertion({**VALID, "x\ud800": 1}, VOCABULARY, now=NOW)
    assert refused.value.field == "'x\\ud800'"
    assert unstorable(refused.value.field) is None
