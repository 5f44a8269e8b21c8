"""Releasing real threads at one instant, each with its own PostgreSQL session."""

import threading
from concurrent.futures import ThreadPoolExecutor

from django.db import connections


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
