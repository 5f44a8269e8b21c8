"""When an hourly or daily digest is due: a table, no database."""

import pytest

from notifications.email.schedule import due_period
from tests.conftest import at


@pytest.mark.parametrize(
    ("frequency", "done", "now", "due"),
    [
        ("hourly", None, "2026-06-02T09:30", "2026-06-02T09:00"),
        ("hourly", "2026-06-02T09:00", "2026-06-02T09:59", None),
        ("hourly", "2026-06-02T09:00", "2026-06-02T10:00", "2026-06-02T10:00"),
        ("daily", None, "2026-06-02T06:59", "2026-06-01T07:00"),
        ("daily", "2026-06-01T07:00", "2026-06-02T06:59", None),
        ("daily", "2026-06-01T07:00", "2026-06-02T07:00", "2026-06-02T07:00"),
        ("daily", "2026-06-02T07:00", "2026-06-02T23:00", None),
        ("off", None, "2026-06-02T09:30", None),
        ("immediately", None, "2026-06-02T09:30", None),
    ],
)
def test_a_digest_is_due_once_per_period_of_the_clock(frequency, done, now, due):
    found = due_period(frequency, done and at(done), at(now), daily_hour=7)
    assert found == (due and at(due))
