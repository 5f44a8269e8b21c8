"""What a slot with an open conflict shows a reader (SPEC §2, §3, §5, §12; issue 31 §3).

Pure: no Django, no database, no clock. One rule for every place that shows
a slot's values: recall's contested state (``GET /truth?contested=true``,
MCP ``recall``), the context digest, and search's results grouped by slot.
The caller passes what the reader's recall serves from the slot (its
*believed* values, in recall's rank) and the open conflicts that touch it,
each with its members; :func:`what_slot_shows` returns a :class:`Shown`.

Rules, in precedence order:

1. **Current is what recall serves, and nothing else.** A slot's current
   values are exactly its believed values (valid, not disputed by an open
   conflict, admitted or the reader's own ``user`` fact), in the order
   given. A value an open conflict disputes is never current, however well
   it ranks (SPEC §5); and a standing value the disputed one collided with
   stays current (SPEC §2: a low-trust write never pushes a trusted fact
   out of recall). It is current because it stood before the dispute, not
   because anything chose it: no winner is ever picked (SPEC §3).
2. **One contest per tangle.** Open conflicts that share a member are one
   contest, so a value is shown in at most one contest, and there once:
   either as *standing* (a current value the contest disputes) or as a
   *candidate* (every other member), never both, and never in two
   contests. Members the reader may not see are not passed in at all.
3. **A contest with a current member is "contested"**: its standing values
   stay current, its candidates are shown beside them as contesting them,
   not believed until a steward rules.
4. **A contest with no current member is "unknown"**: nothing in it is
   current (every member disputed, as in a conflict the crawler found among
   standing facts, or the standing ones not served to this reader, e.g.
   still awaiting a verdict); every member is a candidate, side by side,
   and the answer is "unknown — disputed".
5. **Equal weight.** Candidates come by recorded time, then id, never by
   confidence or role, so none is favoured by its place; standing values
   keep recall's order; contests come by when their first conflict opened,
   then that conflict's id; a contest's conflicts likewise.
6. **The slot**: ``settled`` with no open conflict; ``unknown`` when any of
   its contests is unknown (some question on it has no answer yet);
   ``contested`` otherwise.
"""

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Showing(StrEnum):
    SETTLED = "settled"
    CONTESTED = "contested"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Member:
    """One fact of an open conflict."""

    id: str
    recorded_at: datetime
    # The conflict disputes it (its incoming side, or every member of a
    # conflict with none); the others are what it collided with.
    disputed: bool


@dataclass(frozen=True)
class OpenConflict:
    id: str
    kind: str
    opened_at: datetime
    # Only the members the reader may see.
    members: tuple[Member, ...]


@dataclass(frozen=True)
class Slot:
    # What the reader's recall serves, in its rank order; it may hold values
    # no conflict names (a ``many`` slot's other values).
    believed: tuple[str, ...]
    conflicts: tuple[OpenConflict, ...]


@dataclass(frozen=True)
class Contest:
    """Open conflicts sharing members (rule 2), as the reader is shown them."""

    conflicts: tuple[OpenConflict, ...]
    # Current values the contest disputes (rule 3), in recall's order.
    standing: tuple[str, ...]
    # Every other member, by recorded time then id: none chosen (rule 5).
    candidates: tuple[Member, ...]

    @property
    def showing(self) -> Showing:
        return Showing.CONTESTED if self.standing else Showing.UNKNOWN


@dataclass(frozen=True)
class Shown:
    showing: Showing
    # The believed values, in recall's order, less any a conflict disputes (rule 1).
    current: tuple[str, ...]
    contests: tuple[Contest, ...]


def what_slot_shows(slot: Slot) -> Shown:
    """What ``slot`` shows its reader (the rules above)."""
    disputed = {
        member.id for conflict in slot.conflicts for member in conflict.members if member.disputed
    }
    current = tuple(fact_id for fact_id in slot.believed if fact_id not in disputed)
    rank = {fact_id: index for index, fact_id in enumerate(current)}
    contests = tuple(
        sorted(
            (_contest(tangle, rank) for tangle in _tangles(slot.conflicts)),
            key=lambda contest: (contest.conflicts[0].opened_at, contest.conflicts[0].id),
        )
    )
    if not contests:
        showing = Showing.SETTLED
    elif any(contest.showing is Showing.UNKNOWN for contest in contests):
        showing = Showing.UNKNOWN
    else:
        showing = Showing.CONTESTED
    return Shown(showing=showing, current=current, contests=contests)


def _tangles(conflicts: tuple[OpenConflict, ...]) -> list[list[OpenConflict]]:
    """The conflicts grouped so that two sharing a member are in one group."""
    groups: list[tuple[set[str], list[OpenConflict]]] = []
    for conflict in conflicts:
        ids = {member.id for member in conflict.members}
        joined = [group for group in groups if group[0] & ids]
        merged_ids = ids.union(*(group[0] for group in joined))
        merged = [conflict, *(found for group in joined for found in group[1])]
        groups = [group for group in groups if group not in joined]
        groups.append((merged_ids, merged))
    return [found for _, found in groups]


def _contest(conflicts: list[OpenConflict], rank: dict[str, int]) -> Contest:
    ordered = tuple(sorted(conflicts, key=lambda conflict: (conflict.opened_at, conflict.id)))
    members: dict[str, Member] = {}
    for conflict in ordered:
        for member in conflict.members:
            known = members.get(member.id)
            # A fact disputed by any of the contest's conflicts is disputed.
            if known is None or (member.disputed and not known.disputed):
                members[member.id] = member
    standing = tuple(sorted((i for i in members if i in rank), key=rank.__getitem__))
    candidates = tuple(
        sorted(
            (member for member in members.values() if member.id not in rank),
            key=lambda member: (member.recorded_at, member.id),
        )
    )
    return Contest(conflicts=ordered, standing=standing, candidates=candidates)
