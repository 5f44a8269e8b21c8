"""A required reason (or ground, or episode name): one rule for every action that asks why."""

import pytest

from memories.core.decisions import Rejected
from memories.core.text import MAX_REASON_LENGTH, required_reason, required_text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("  the vendor said so ", "the vendor said so"),
        ("x" * MAX_REASON_LENGTH, "x" * MAX_REASON_LENGTH),
        ("line one\nline two", "line one\nline two"),
    ],
)
def test_a_reason_is_kept_without_its_surrounding_whitespace(value, expected):
    assert required_reason(value, "reason") == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "reason: is required: say why"),
        ("", "reason: is required: say why"),
        ("  \n\t ", "reason: is required: say why"),
        (42, "reason: must be text"),
        (["why"], "reason: must be text"),
        # Text PostgreSQL cannot store, or too long: decisions.check_text's words.
        ("nul \x00 inside", None),
        ("x" * (MAX_REASON_LENGTH + 1), None),
    ],
)
def test_a_missing_or_unstorable_reason_is_rejected_naming_its_field(value, message):
    with pytest.raises(Rejected) as refused:
        required_reason(value, "reason")
    assert refused.value.field == "reason"
    assert message is None or str(refused.value) == message


def test_other_required_text_has_its_own_limit_and_plain_message():
    assert required_text(" ep-1 ", "episode", limit=5) == "ep-1"
    with pytest.raises(Rejected, match=r"episode: is required$"):
        required_text(" ", "episode", limit=5)
    with pytest.raises(Rejected, match=r"^episode: "):
        required_text("episode-2", "episode", limit=5)
