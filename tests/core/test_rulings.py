"""When a human's word holds automatic maintenance off: tables of times in, answers out."""

from datetime import UTC, datetime, timedelta

import pytest

from memories.core.rulings import left_for_a_human, not_before_rulings

T = datetime(2026, 6, 1, tzinfo=UTC)
H = timedelta(hours=1)


@pytest.mark.parametrize(
    ("facts", "held"),
    [
        pytest.param([(T, None), (T + H, None)], False, id="no-ruling"),
        pytest.param([(T, T + 2 * H), (T + H, None)], True, id="a-revert-after-both"),
        pytest.param([(T, None), (T + H, T + H)], True, id="ruled-at-the-newer-ones-recording"),
        pytest.param([(T, T + H / 2), (T + H, None)], False, id="ruled-before-the-newer-existed"),
        pytest.param([(T, T + H / 2), (T + H, T + 2 * H)], True, id="the-latest-ruling-counts"),
        pytest.param([(T, T + H)], True, id="one-fact"),
    ],
)
def test_a_ruling_after_every_fact_was_recorded_leaves_them_for_a_human(facts, held):
    assert left_for_a_human(facts) is held


@pytest.mark.parametrize(
    ("at", "ruled", "closes_at"),
    [
        pytest.param(T, [], T, id="no-ruling"),
        pytest.param(T, [None, None], T, id="none-ruled"),
        pytest.param(T + H, [T], T + H, id="ruled-before"),
        pytest.param(T, [T + H, None, T + H / 2], T + H, id="ruled-after: the latest ruling"),
    ],
)
def test_a_closing_is_never_dated_before_a_ruling(at, ruled, closes_at):
    assert not_before_rulings(at, ruled) == closes_at
