"""Benchmark: what notifications cost a write, and what a feed pass costs on a big store.

Not a test. Issue 32: "enqueueing an event costs the write path no more than
one INSERT". The write path writes no event at all (the feed reads events off
the records a write already keeps), so the figure is the number of rows a write
that opens a conflict (the write that tells a steward most) inserts into
``notifications_*`` tables, as PostgreSQL counts them for the write's own
transaction (``pg_stat_xact_user_tables``: every row, whichever statement or
function inserted it); its detail names every table the write inserts into. Beside it, timed on the
same store: the feed passes that catch up with what the measures before this
one wrote, and a pass with nothing new (what a worker pays every
``CLAIMGRAPH_NOTIFY_SECONDS`` while nothing happens).

``measure(store)`` is what ``bench/scale.py`` calls.
"""

import time

from _figures import Figure, Store
from _setup import median

# Rows inserted into each table by the current transaction, as PostgreSQL counts them.
INSERTED = "SELECT relname, n_tup_ins FROM pg_stat_xact_user_tables WHERE n_tup_ins > 0"
# Passes with nothing new timed per round.
EMPTY_PASSES = 10


def measure(store: Store, *, rounds: int = 3) -> list[Figure]:
    from django.contrib.auth.models import User
    from django.db import connection, transaction
    from django.utils import timezone

    from memories.store.models import Scope
    from memories.write.actions import assert_fact
    from notifications.feed import record_events

    agent = User.objects.get(pk=store.agent_id)
    scope = Scope.objects.get(pk=store.conflict_scope_id)
    write = {
        "scope": scope.name,
        "subject": "bench-events-subject",
        "predicate": "core/has-version",
        "source_type": "code",
    }
    assert_fact(actor=agent, data={**write, "object": "1.0.0"})
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(INSERTED)
        before = dict(cursor.fetchall())
        result = assert_fact(
            actor=agent, data={**write, "object": "2.0.0", "source_type": "agent-note"}
        )
        cursor.execute(INSERTED)
        inserts = {
            table: count - before.get(table, 0)
            for table, count in cursor.fetchall()
            if count > before.get(table, 0)
        }
    assert result.status == "flagged", result.status
    into_notifications = sum(n for table, n in inserts.items() if table.startswith("notif"))

    caught_up, passes, written = catch_up(record_events, timezone.now)
    empty = []
    for _ in range(EMPTY_PASSES * rounds):
        started = time.perf_counter()
        assert record_events(now=timezone.now()) == {}
        empty.append((time.perf_counter() - started) * 1000)
    tables = ", ".join(f"{table} {count}" for table, count in sorted(inserts.items()))
    return [
        Figure(
            "INSERTs into notifications tables per write (one opening a conflict)",
            into_notifications,
            "<= 1",
            f"rows inserted: {tables}; the feed then "
            f"caught up in {passes} passes ({written:,} events, {caught_up:.0f} ms); a pass "
            f"with nothing new: median {median(empty):.1f} ms of {len(empty)}",
        )
    ]


def catch_up(record_events, now) -> tuple[float, int, int]:
    """Passes until one writes nothing: how long they took (ms), how many, their events."""
    started = time.perf_counter()
    passes = written = 0
    while True:
        counts = record_events(now=now())
        passes += 1
        if not counts:
            return (time.perf_counter() - started) * 1000, passes, written
        written += sum(counts.values())
