"""Releasing real threads at one instant, each with its own PostgreSQL session."""

import threading
from concurrent.futures import ThreadPoolExecutor

from django.db import connection, connections


def race(function, arguments):
    """Run ``function`` once per argument, all released at the same instant.

    Django keeps one connection per thread, so each call is a separate
    database session; each closes its connection when done.
    """
    barrier = threading.Barrier(len(arguments))

    def run(argument):
        try:
            barrier.wait()
            return function(argument)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=len(arguments)) as pool:
        return list(pool.map(run, arguments))


def a_session_waits_on_a_lock() -> bool:
    """Whether another session of this database is waiting on a lock right now."""
    with connection.cursor() as cursor:
        # Inside a transaction PostgreSQL keeps showing the statistics views as
        # first read; each poll must see them afresh.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid())"
        )
        return cursor.fetchone()[0]
