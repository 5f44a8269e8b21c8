"""The words of a fact's status explanation, split into parts a template can render.

``admissions.status`` writes each finding as one sentence, naming records by
the first eight characters of their id and times in ISO 8601: plain text
that the API serves as it is. The fact page shows the same sentence with
each time humanized like every other time on the page, and each record as a
link to its place in the record list, by the number it carries there.
Nothing here writes HTML: a part is text, a time or a record.
"""

import re
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from admissions.status import Finding, Status
from memories.core.when import human_time

# What the status fold writes for a time (``isoformat(timespec="seconds")``)
# and for a record (``short_id``).
_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)"
_TIME = re.compile(_ISO)
_TOKEN = re.compile(rf"(?P<time>{_ISO})|(?P<record>\b[0-9a-f]{{8}}\b)")


@dataclass(frozen=True)
class Part:
    """One piece of an explanation: ``text``, or a ``time``, or a ``record`` by id and number."""

    text: str = ""
    time: datetime | None = None
    record: UUID | None = None
    number: int = 0


def explanation_parts(status: Status, numbers: dict[UUID, int]) -> list[list[Part]]:
    """Each finding of ``status`` as parts; ``numbers`` numbers the fact's records from 1.

    A short id is a record only where the finding rests on a record with
    that id; any other eight hex digits stay text.
    """
    return [_parts(finding, numbers) for finding in status.findings]


def _parts(finding: Finding, numbers: dict[UUID, int]) -> list[Part]:
    named = {str(record_id)[:8]: record_id for record_id in finding.records}
    parts: list[Part] = []
    at = 0
    for match in _TOKEN.finditer(finding.text):
        if match["record"] and match["record"] not in named:
            continue
        if match.start() > at:
            parts.append(Part(text=finding.text[at : match.start()]))
        if match["time"]:
            parts.append(Part(time=datetime.fromisoformat(match["time"])))
        else:
            record_id = named[match["record"]]
            parts.append(Part(record=record_id, number=numbers.get(record_id, 0)))
        at = match.end()
    if at < len(finding.text):
        parts.append(Part(text=finding.text[at:]))
    return parts


def humane_times(text: str, zone) -> str:
    """``text`` with each ISO 8601 time in it written the one human way (``when``)."""
    return _TIME.sub(lambda match: human_time(datetime.fromisoformat(match[0]), zone), text)
