"""Forgetting: effective confidence is derived from the clock, never stored (SPEC §4).

Pure: the caller passes the time asked about and the decay settings.

    effective = max(floor, base * 0.5 ^ (days since last reinforcement / half_life))

Commitments and facts from sources that do not decay (``decision-record``)
keep their base. A time before the last reinforcement counts as zero days, and
a fact never reads above its own base, so a base below the floor reads as the
base. Decay only lowers a fact's rank; it never makes the fact false.
"""

from datetime import datetime

SECONDS_PER_DAY = 86_400.0


def effective_confidence(
    base: float,
    *,
    last_reinforced_at: datetime,
    at: datetime,
    decays: bool,
    half_life_days: float,
    floor: float,
) -> float:
    if not decays:
        return base
    days = max(0.0, (at - last_reinforced_at).total_seconds() / SECONDS_PER_DAY)
    decayed = base * 0.5 ** (days / half_life_days)
    return min(base, max(floor, decayed))


def fact_decays(epistemic: str, source_decays: bool) -> bool:
    """Commitments never decay, nor does anything from a non-decaying source."""
    return source_decays and epistemic != "commitment"
