"""SPEC §4: effective confidence is a pure function of the fact and the time asked about."""

import pytest

from memories.core.confidence import effective_confidence, fact_decays
from tests.conftest import at

SETTINGS = {"half_life_days": 90, "floor": 0.05}


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("2026-01-01", 0.7),
        ("2026-04-01", 0.35),
        ("2026-06-30", 0.175),
        ("2027-01-01", 0.05),
    ],
)
def test_session_log_observation_halves_every_ninety_days_down_to_the_floor(when, expected):
    value = effective_confidence(
        0.7,
        last_reinforced_at=at("2026-01-01"),
        at=at(when),
        decays=fact_decays("observation", source_decays=True),
        **SETTINGS,
    )
    assert value == pytest.approx(expected, abs=1e-9)


def test_commitment_does_not_decay():
    value = effective_confidence(
        0.9,
        last_reinforced_at=at("2026-01-01"),
        at=at("2027-01-01"),
        decays=fact_decays("commitment", source_decays=True),
        **SETTINGS,
    )
    assert value == 0.9


def test_decision_record_source_does_not_decay():
    assert fact_decays("observation", source_decays=False) is False


def test_time_before_last_reinforcement_counts_as_zero_days():
    value = effective_confidence(
        0.7, last_reinforced_at=at("2026-01-01"), at=at("2025-06-01"), decays=True, **SETTINGS
    )
    assert value == 0.7


def test_base_below_floor_reads_as_its_base():
    value = effective_confidence(
        0.02, last_reinforced_at=at("2026-01-01"), at=at("2027-01-01"), decays=True, **SETTINGS
    )
    assert value == 0.02
