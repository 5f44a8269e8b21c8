"""What the actions raise when they refuse. Each face maps them to its own answer.

``Rejected`` (bad input, 400) lives in the pure core, ``memories.core.decisions``,
because input checking is part of the decision; it is re-exported here so the
faces import every refusal from one place.
"""

from memories.core.decisions import Rejected


class NotFound(Exception):
    """Absent, or outside what the caller may see: the two are indistinguishable (404)."""

    def __init__(self, what: str = "object") -> None:
        super().__init__(f"{what} not found")
        self.what = what


class Forbidden(Exception):
    """Visible to the caller but not theirs to do (403)."""


class StateConflict(Exception):
    """The object is not in a state that allows this (409)."""


__all__ = ["Forbidden", "NotFound", "Rejected", "StateConflict"]
