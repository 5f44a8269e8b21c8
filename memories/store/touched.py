"""The truth slots a write touched, marked in the write's own transaction (SPEC §7).

Every writer calls ``recompute_on_commit`` with what ``do_apply`` touched; the
marks (``TouchedSlot``) commit or roll back with the write, and the worker's
drain (``memories.maintenance.tasks.recompute_touched_slots_task``) recomputes each
marked slot once. Here, below every writer, so that a writer marks without
importing the background work that drains the marks.
"""

from collections.abc import Iterable

from memories.store.lookups import hot_cursor
from memories.store.models import TouchedSlot


def recompute_on_commit(slots: Iterable[tuple[int, int, int]]) -> None:
    """Have these truth slots recomputed once the current transaction commits.

    Every caller of ``memories.store.apply`` passes what it touched
    (``Applied.touched``, ``SetApplier.touched``); truth maintenance, which
    recomputes the slot it acts on, does not. The slots are marked touched
    (:class:`~memories.store.models.TouchedSlot`) in one statement of the current
    transaction: the marks become visible when it commits, a rollback drops
    them with the writes that made them, and a worker's drain
    (``recompute_touched_slots_task``) recomputes each once, however many
    writes touched it in between. The statement needs no answer, so the
    write path sends it with its COMMIT (``memories.write.actions.assert_fact``).
    """
    wanted = sorted(set(slots))
    if not wanted:
        return
    with hot_cursor() as cursor:
        if len(wanted) == 1:  # one write's slot: three numbers bind faster than three arrays
            cursor.execute(_TOUCH_ONE_SQL, wanted[0], prepare=True)
            return
        scopes, subjects, predicates = (list(column) for column in zip(*wanted, strict=True))
        cursor.execute(_TOUCH_SQL, [scopes, subjects, predicates], prepare=True)


# A slot already marked counts one more touch, which tells a recompute that
# read the mark before it to keep the mark; ``touched_at`` stays the first
# touch's. Sorted, so two statements marking overlapping slots lock the rows
# in one order.
_TOUCHED = (
    f"INSERT INTO {TouchedSlot._meta.db_table} AS mark (scope_id, subject_id, predicate_id) {{}}"
    " ON CONFLICT (scope_id, subject_id, predicate_id) DO UPDATE SET touches = mark.touches + 1"
)
_TOUCH_SQL = _TOUCHED.format("SELECT * FROM unnest(%b::bigint[], %b::bigint[], %b::bigint[])")
_TOUCH_ONE_SQL = _TOUCHED.format("VALUES (%s, %s, %s)")
