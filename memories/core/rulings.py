"""When facts count as already linked, and when a human's word on them holds off maintenance.

Pure: no Django. Background maintenance (the crawler, truth maintenance,
the judge) must never reopen a question a steward has answered, nor open a
second conflict between facts that already share one, nor settle by itself
what a steward has taken up since. They ask these functions, fed with each
fact's conflicts as loaded by ``ConflictMemberQuerySet.ties`` (the open
conflicts it is a member of, and the resolved ones whose resolution is in
:data:`RULINGS`) and with the time a human last ruled on it, as loaded by
``ConflictMemberQuerySet.ruled_at``.

The rules, in the order maintenance weighs them:

1. **Linked** (:func:`linked`, :func:`all_pairs`): two facts that share an
   open conflict, or were ruled on together, get no second conflict; two a
   steward ruled on together are never superseded one by the other.
2. **Left for a human** (:func:`left_for_a_human`): when a human ruled on,
   reopened or reverted a change to one of the facts an automatic change
   would close or resolve, *after every one of them was recorded*, that
   human acted with all of them in the store: automatic maintenance closes
   none of them and leaves the question to a human (a conflict, or the one
   already open). A restating of a fact (a reinforcement) is not a new
   fact: it does not end the hold.
3. **Never before a ruling** (:func:`not_before_rulings`): where
   maintenance may act, the valid time it closes a fact at is never earlier
   than the latest human ruling on the facts involved, so no audit entry
   says a fact ended before the ruling it comes after.
"""

from collections.abc import Iterable, Sequence
from datetime import datetime
from itertools import combinations

# Resolutions by which a steward answered that the facts may stand together:
# they coexist, the conflict was a false positive, or they were kept.
RULINGS = frozenset({"coexist", "dismissed", "kept"})
# A conflict a person's act closed as moot (a steward rejected a side of it,
# ``memories.write.sides``) names who closed it, and counts as a ruling too
# (``ConflictMemberQuerySet.ties``): the rejected fact stays valid, and
# without this the crawler would put it back beside its rival at once.


def ruled_together(a_ruled: frozenset, b_ruled: frozenset) -> bool:
    """Whether two facts were both members of one conflict a steward ruled on."""
    return bool(a_ruled & b_ruled)


def linked(a_open: frozenset, a_ruled: frozenset, b_open: frozenset, b_ruled: frozenset) -> bool:
    """Whether two facts share an open conflict, or were ruled on together."""
    return bool(a_open & b_open) or ruled_together(a_ruled, b_ruled)


def all_pairs(ties: Sequence[tuple[frozenset, frozenset]], *, ruled_only: bool = False) -> bool:
    """Whether every pair of these facts, each given as (open, ruled), is linked.

    With ``ruled_only``, only a ruling counts. Fewer than two facts: trivially.
    """
    for (a_open, a_ruled), (b_open, b_ruled) in combinations(ties, 2):
        if ruled_only:
            if not ruled_together(a_ruled, b_ruled):
                return False
        elif not linked(a_open, a_ruled, b_open, b_ruled):
            return False
    return True


def left_for_a_human(facts: Iterable[tuple[datetime, datetime | None]]) -> bool:
    """Whether a human ruled on one of these facts after all of them were recorded (rule 2).

    ``facts``: for each fact an automatic change would act on, its
    (``recorded_at``, the time a human last ruled on it or None). A ruling
    at the very instant a fact was recorded counts as after it.
    """
    facts = list(facts)
    ruled = [at for _, at in facts if at is not None]
    return bool(ruled) and max(ruled) >= max(recorded for recorded, _ in facts)


def not_before_rulings(at: datetime, ruled: Iterable[datetime | None]) -> datetime:
    """``at``, or the latest of the rulings ``ruled`` if that is later (rule 3)."""
    return max([at, *(when for when in ruled if when is not None)])
