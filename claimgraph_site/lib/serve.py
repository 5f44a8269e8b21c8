"""``make run``: set up, serve, and stop everything together.

``python -m claimgraph_site.lib.serve [--port 8000] [--no-demo] [--noreload]``

1. With the embedded database (no ``DATABASE_URL``), starts it and counts
   this process as its user for as long as it runs, so the steps and the
   services below share one server instead of each starting and stopping it.
2. Runs the set-up steps one after another: the migrations, the demo data.
3. Runs the services side by side: the ASGI web server (uvicorn) and a task
   worker (``manage.py worker``), one entry each in ``services``. The web
   server restarts when a file of ``WATCHED_DIRS`` changes (not with
   ``--noreload``); the worker does not.
4. On SIGTERM (a process manager) passes the signal on to each step or
   service; on SIGINT (Ctrl-C, which the terminal sends to them too) passes
   it on only to those still running a second later. They get
   ``GRACE_SECONDS`` to finish (a second signal, or the end of the grace,
   kills them); then it stops the embedded database unless another process
   (a test run, a shell) still uses it, and says so, and exits with status 0
   (a clean stop, so make says nothing of it). If a service ends by itself,
   the others are stopped the same way (SIGTERM) and it exits with that
   service's status.

After a SIGKILL of this process or of the whole group, nothing stops the
embedded database: it keeps running and the next ``make run`` reuses it
(``make stop`` stops it). On Linux the services get SIGTERM when this process
dies, so none keeps the port.
"""

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from claimgraph_site.lib import embedded_db
from claimgraph_site.lib.http_protocol import keepalive_seconds

ROOT = Path(__file__).resolve().parent.parent.parent
# What the web server's reloader watches: the project's own code and
# templates, never .venv/ (thousands of files), var/ or the tests. With
# watchfiles installed (requirements.lock) uvicorn is told of a change by
# inotify instead of polling every file four times a second.
WATCHED_DIRS = (
    "accounts",
    "admissions",
    "api",
    "claimgraph_site",
    "console",
    "demo",
    "memories",
    "notifications",
    "templates",
)
WATCHED_PATTERNS = ("*.py", "*.html")
GRACE_SECONDS = 10.0
SIGINT_PASS_ON_SECONDS = 1.0
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Command:
    name: str
    argv: list[str]


def steps(options: argparse.Namespace) -> list[Command]:
    manage = [sys.executable, str(ROOT / "manage.py")]
    commands = [Command("migrate", [*manage, "migrate", "--no-input"])]
    if options.demo:
        commands.append(Command("demo data", [*manage, "seed_demo"]))
    return commands


def services(options: argparse.Namespace) -> list[Command]:
    # uvicorn, not runserver: Django's runserver speaks WSGI only, and the ASGI
    # application serves the console, the JSON API and MCP at /mcp/ together.
    web = [
        sys.executable,
        "-m",
        "uvicorn",
        "claimgraph_site.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        str(options.port),
        # The same connection deadlines as production (gunicorn.conf.py).
        "--http",
        "claimgraph_site.lib.http_protocol:HeaderDeadlineProtocol",
        "--timeout-keep-alive",
        str(keepalive_seconds()),
    ]
    if options.reload:
        web.append("--reload")
        for folder in WATCHED_DIRS:
            web += ["--reload-dir", str(ROOT / folder)]
        for pattern in WATCHED_PATTERNS:
            web += ["--reload-include", pattern]
    # The task worker beside the server, so the demo's background work happens
    # (and stops with it: one supervisor, one stop).
    worker = [sys.executable, str(ROOT / "manage.py"), "worker"]
    return [Command("web server", web), Command("task worker", worker)]


class Supervisor:
    """The children and the stop request; signal handlers only record, the loop acts."""

    def __init__(self) -> None:
        self.children: list[subprocess.Popen] = []
        self.stop_signal: int | None = None
        self.pass_on_at: float | None = None
        self.kill_at: float | None = None

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        now = time.monotonic()
        if self.stop_signal is None:
            self.stop_signal = signum
            # A terminal's Ctrl-C reaches the children too (they share this
            # process group, so they can read the terminal: a breakpoint()
            # works); pass it on only if it was sent to this process alone.
            self.pass_on_at = now + (SIGINT_PASS_ON_SECONDS if signum == signal.SIGINT else 0)
            self.kill_at = now + GRACE_SECONDS
        else:
            # A second Ctrl-C: do not wait any longer.
            self.kill_at = now

    def start(self, command: Command) -> subprocess.Popen:
        child = subprocess.Popen(command.argv, cwd=ROOT, preexec_fn=_die_with_parent)
        self.children.append(child)
        if self.stop_signal is not None:
            # The signal came while the child was being started.
            _send(child, self.stop_signal)
        return child

    def signal_children(self, signum: int) -> None:
        for child in self.children:
            if child.poll() is None:
                _send(child, signum)

    def wait(self, *, any_exit: bool) -> subprocess.Popen | None:
        """Wait until a child ends (``any_exit``) or all have, killing the rest after the grace."""
        while True:
            now = time.monotonic()
            if self.pass_on_at is not None and now >= self.pass_on_at:
                assert self.stop_signal is not None
                self.signal_children(self.stop_signal)
                self.pass_on_at = None
            running = [child for child in self.children if child.poll() is None]
            if not running or (any_exit and len(running) < len(self.children)):
                return next((child for child in self.children if child.poll() is not None), None)
            if self.kill_at is not None and now >= self.kill_at:
                self.signal_children(signal.SIGKILL)
            time.sleep(0.05)

    def stop_all(self) -> None:
        if self.kill_at is None:
            self.kill_at = time.monotonic() + GRACE_SECONDS
            self.signal_children(signal.SIGTERM)
        self.wait(any_exit=False)


def run(options: argparse.Namespace) -> int:
    supervisor = Supervisor()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, supervisor.on_signal)
    server = None
    if not os.environ.get("DATABASE_URL", "").strip():
        server = embedded_db.EmbeddedServer.at(embedded_db.var_dir_from_environment())
        try:
            embedded_db.use(server)
        except embedded_db.EmbeddedDatabaseError as error:
            print(f"claimgraph: {error}", file=sys.stderr)
            return 1
    try:
        status = _set_up_and_serve(supervisor, options)
    finally:
        if server is not None:
            _release(server)
    # A stop asked for by a signal ends with the status of the stop itself (0
    # when everything stopped cleanly), not by the signal: `make` would report
    # a process killed by it as "*** [run] Terminated". A Ctrl-C or a process
    # manager's SIGTERM to the whole group reaches make too, which still ends
    # by it, so the shell above sees the interrupt.
    return status


def _set_up_and_serve(supervisor: Supervisor, options: argparse.Namespace) -> int:
    for step in steps(options):
        if supervisor.stop_signal is not None:
            return 0
        child = supervisor.start(step)
        supervisor.wait(any_exit=False)
        supervisor.children.remove(child)
        if child.returncode != 0 and supervisor.stop_signal is None:
            print(
                f"claimgraph: {step.name} failed (exit status {child.returncode}).", file=sys.stderr
            )
            return child.returncode if child.returncode > 0 else 1
    if supervisor.stop_signal is not None:
        return 0
    started = {supervisor.start(service): service for service in services(options)}
    ended = supervisor.wait(any_exit=True)
    status = 0
    if supervisor.stop_signal is None and ended is not None:
        print(
            f"claimgraph: the {started[ended].name} ended (exit status {ended.returncode}); "
            "stopping the rest.",
            file=sys.stderr,
        )
        status = ended.returncode if ended.returncode > 0 else 1
    supervisor.stop_all()
    return status


def _release(server: embedded_db.EmbeddedServer) -> None:
    if embedded_db.release(server):
        print(f"claimgraph: stopped the embedded PostgreSQL ({server.pgdata}).", file=sys.stderr)
    elif embedded_db.accepts_connections(server):
        print(
            f"claimgraph: the embedded PostgreSQL ({server.pgdata}) keeps running: another "
            "process still uses it. `make stop` stops it.",
            file=sys.stderr,
        )


def _send(child: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.send_signal(signum)


_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _die_with_parent() -> None:
    """In the child, before exec: on Linux, get SIGTERM when the supervisor dies."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m claimgraph_site.lib.serve")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--no-demo", dest="demo", action="store_false", help="skip seed_demo")
    parser.add_argument(
        "--noreload",
        dest="reload",
        action="store_false",
        help="no autoreloader",
    )
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
