"""When an hourly or daily digest is due: pure, on plain values and an explicit ``now``.

Periods are fixed on the clock, in UTC, so every worker agrees on them:

1. an hourly digest's period starts on the hour;
2. a daily digest's period starts at ``daily_hour`` o'clock each day;
3. a digest is due when the period ``now`` falls in has not been handled yet
   (``done`` is the start of the latest period handled, or None for never);
4. "off" and "immediately" are never due on the clock.
"""

from datetime import UTC, datetime, timedelta

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def period_start(frequency: str, now: datetime, *, daily_hour: int) -> datetime | None:
    """The start of the period of ``frequency`` that ``now`` falls in (None: not periodic)."""
    now = now.astimezone(UTC)
    if frequency == "hourly":
        return now.replace(minute=0, second=0, microsecond=0)
    if frequency == "daily":
        start = now.replace(hour=daily_hour, minute=0, second=0, microsecond=0)
        return start if start <= now else start - DAY
    return None


def due_period(
    frequency: str, done: datetime | None, now: datetime, *, daily_hour: int
) -> datetime | None:
    """The period a digest is due for at ``now``, or None when none is."""
    start = period_start(frequency, now, daily_hour=daily_hour)
    if start is None or (done is not None and done >= start):
        return None
    return start
