"""When facts count as already linked: a shared open conflict, or a steward's ruling.

Pure: no Django. Background maintenance (the crawler, truth maintenance)
must never reopen a question a steward has answered, nor open a second
conflict between facts that already share one. Both ask these functions,
fed with each fact's conflicts as loaded by
``ConflictMemberQuerySet.ties``: the open conflicts it is a member of, and
the resolved ones whose resolution is in :data:`RULINGS`.
"""

from collections.abc import Sequence
from itertools import combinations

# Resolutions by which a steward answered that the facts may stand together:
# they coexist, the conflict was a false positive, or they were kept.
RULINGS = frozenset({"coexist", "dismissed", "kept"})


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
