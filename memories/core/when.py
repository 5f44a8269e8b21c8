"""One way to write a moment for people: "3 Dec 2026, 14:05 UTC".

The console's ``when`` filter and every explanation built in Python (an admission's
"by stella at ...") use this, so a time reads the same wherever it appears.
"""

from datetime import datetime, tzinfo


def human_time(at: datetime, zone: tzinfo | None = None) -> str:
    """``at`` in ``zone`` (its own zone when None), day month year, hours:minutes, zone."""
    local = at.astimezone(zone) if zone is not None else at
    return f"{local.day} {local:%b %Y, %H:%M} {local.tzname() or 'UTC'}"
