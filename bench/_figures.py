"""The shapes the scale benchmark passes around: a generated store and a figure.

``bench/generate.py`` builds a :class:`Store`; each measuring module's
``measure(store)`` returns :class:`Figure` values; ``bench/scale.py`` prints
them in one table beside their targets and compares the p95 of every read
between the two sizes.
"""

import operator
import re
from dataclasses import dataclass, field

_TARGET = re.compile(r"^(<=|>=)\s*([0-9.]+)$")
_COMPARE = {"<=": operator.le, ">=": operator.ge}


@dataclass(frozen=True)
class Store:
    """What a generated store holds, for the measures to find their way in."""

    facts: int
    scope_ids: list[int]
    steward_id: int
    agent_id: int
    agent_token: str
    fact_ids: list[int]
    subjects: list[tuple[int, int]]
    conflict_scope_id: int
    system_fact_ids: list[int]


@dataclass(frozen=True)
class Figure:
    """One measured figure against its target.

    ``target`` is ``"<= x"``, ``">= x"`` or ``"constant"`` (``value`` is then
    the spread of a count between sizes, so 0 passes). ``p95_ms`` names the
    reads whose p95 the harness compares between the two sizes, and
    ``queries`` a request's query count, which must not change between them.
    """

    measure: str
    value: float
    target: str
    detail: str = ""
    p95_ms: dict[str, float] = field(default_factory=dict)
    queries: int | None = None

    def passed(self) -> bool:
        if self.target == "constant":
            return self.value == 0
        match = _TARGET.match(self.target)
        if match is None:
            raise ValueError(f"unreadable target {self.target!r}")
        sign, bound = match.groups()
        return _COMPARE[sign](self.value, float(bound))


def p95(values: list[float]) -> float:
    """The 95th percentile by the nearest-rank method."""
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]
