"""Shared start-up for the benchmarks: Django on a database of the bench's own.

A benchmark must never touch the development data, so each one names its own
database on the same server (the embedded one by default, or the server of
DATABASE_URL), creates it fresh, migrates it, and drops it at the end.
"""

import os
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def start_django(database: str) -> None:
    """Point Django at a fresh database called ``database`` and migrate it."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "claimgraph_site.settings")
    # Measure what production runs: DEBUG off (with it on, Django logs every
    # query with its SQL, which costs more than some of the queries).
    os.environ["DJANGO_DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SECRET_KEY", secrets.token_urlsafe(50))
    os.environ.setdefault("DJANGO_ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
    if os.environ.get("DATABASE_URL"):
        base, _, _ = os.environ["DATABASE_URL"].rpartition("/")
        os.environ["DATABASE_URL"] = f"{base}/{database}"
    else:
        os.environ["CLAIMGRAPH_DATABASE_NAME"] = database
    import django

    django.setup()
    _recreate(database)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _admin_connection():
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    return psycopg.connect(
        host=db["HOST"],
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    )


def _recreate(database: str) -> None:
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{database}"')


def drop_database(database: str) -> None:
    from django.db import connections

    connections.close_all()
    with _admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def raw_connection():
    """A plain psycopg connection to the bench database, for the baselines."""
    import psycopg
    from django.db import connection

    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"],
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db["PASSWORD"] or None,
        dbname=db["NAME"],
    )


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds else float("inf")


def best_of(runs: int, function: Callable[[], float]) -> float:
    """The fastest of several timed runs: the least disturbed by a noisy machine."""
    return min(function() for _ in range(runs))


def timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def median(values: list[float]) -> float:
    return statistics.median(values)


def use_database(database: str) -> None:
    """Point Django's default connection at another database on the same server."""
    from django.db import connection

    if connection.settings_dict["NAME"] != database:
        connection.close()
        connection.settings_dict["NAME"] = database


def create_database(database: str) -> None:
    """A fresh, migrated ``database`` beside the one ``start_django`` made; Django moves to it."""
    from django.core.management import call_command

    _recreate(database)
    use_database(database)
    call_command("migrate", verbosity=0)


def server_environment(database_url: str, *, write_rate: str = "100000000") -> dict[str, str]:
    """The environment of a server process as production runs it, on ``database_url``.

    DEBUG off with a secret, plain HTTP on loopback, the write limit at
    ``write_rate`` a minute (on, as in production; by default too high to
    refuse), and quiet: whitenoise warns that collectstatic has not run, and
    the API needs no static files.
    """
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "claimgraph_site.settings",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", secrets.token_urlsafe(50)),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "DATABASE_URL": database_url,
        "CLAIMGRAPH_API_WRITE_RATE": write_rate,
        "CLAIMGRAPH_LOG_LEVEL": "ERROR",
        "PYTHONWARNINGS": "ignore::UserWarning",
    }
