"""A truth slot (``memories.store.models.TruthSlot``) as the console shows it: plain values.

The slot stores its values as JSON (times as ISO text); the subject page and
the conflict page show them through the same template include
(``console/includes/truth_slot.html``), fed by :func:`slot_panels`.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memories.store.models import TruthSlot


@dataclass(frozen=True)
class ShownValue:
    object: str
    status: str
    confidence: float
    effective_confidence: float
    t_valid: datetime | None
    # The value's first claim, for its link; how many claims hold it.
    fact_id: str
    claims: int
    support: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class SlotPanel:
    slot: TruthSlot
    values: tuple[ShownValue, ...]


def slot_panels(slots: Iterable[TruthSlot]) -> list[SlotPanel]:
    return [SlotPanel(slot, tuple(_value(item) for item in slot.values)) for slot in slots]


def _value(item: dict[str, Any]) -> ShownValue:
    fact_ids = item.get("fact_ids") or [""]
    return ShownValue(
        object=str(item.get("object", "")),
        status=str(item.get("status", "")),
        confidence=float(item.get("confidence", 0.0)),
        effective_confidence=float(item.get("effective_confidence", 0.0)),
        t_valid=_moment(item.get("t_valid")),
        fact_id=str(fact_ids[0]),
        claims=len(fact_ids),
        support=tuple(
            {"ref": str(entry.get("ref", "")), "quote": str(entry.get("quote", ""))}
            for entry in item.get("support") or ()
        ),
    )


def _moment(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None
