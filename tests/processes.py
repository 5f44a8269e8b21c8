"""Real processes of the site (web servers, task workers, commands) on this test run's database."""

import os
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from django.db import connection

from tests.deadlines import PROCESS_DEADLINE

ROOT = Path(__file__).resolve().parents[1]


def database_environment(**extra: str) -> dict[str, str]:
    """The environment of a process that uses this test run's database, plus ``extra``."""
    database = connection.settings_dict
    env = {key: value for key, value in os.environ.items() if key != "CLAIMGRAPH_TEST_DATABASE"}
    env["DJANGO_DEBUG"] = "1"
    if os.environ.get("DATABASE_URL"):
        credentials = quote(database["USER"]) + (
            f":{quote(database['PASSWORD'])}" if database["PASSWORD"] else ""
        )
        env["DATABASE_URL"] = (
            f"postgresql://{credentials}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
        )
    else:
        # The embedded server: the process joins it and names the test database.
        env["CLAIMGRAPH_DATABASE_NAME"] = database["NAME"]
    env.update(extra)
    return env


def production_environment(**extra: str) -> dict[str, str]:
    """As production runs: DEBUG off, a secret, this machine's host, plain HTTP on loopback."""
    return database_environment(
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DJANGO_SECURE_SSL_REDIRECT="0",
        PYTHONWARNINGS="ignore::UserWarning",
        **extra,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Process:
    """A process in a session of its own, so that it and its children stop or die together."""

    def __init__(self, arguments: list[str], env: dict[str, str], log: Path) -> None:
        self.arguments = arguments
        self.env = env
        self.log = log
        self.popen: subprocess.Popen | None = None

    def start(self) -> "Process":
        with self.log.open("a") as out:
            self.popen = subprocess.Popen(
                self.arguments,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL to the whole group, as the OOM killer or a lost machine would."""
        assert self.popen is not None
        os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()

    def stop(self) -> None:
        """SIGTERM, as a process manager stops it; SIGKILL if it does not go in time."""
        if not self.running:
            return
        assert self.popen is not None
        os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(timeout=PROCESS_DEADLINE)
        except subprocess.TimeoutExpired:
            self.kill()


def web_server(port: int, env: dict[str, str], log: Path, *, workers: int = 2) -> Process:
    """The site as production serves it (``gunicorn.conf.py``) on ``port``."""
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    arguments = [gunicorn, "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}"]
    return Process([*arguments, "--workers", str(workers)], env, log)


def task_worker(env: dict[str, str], log: Path, *extra: str) -> Process:
    """``manage.py worker``: Django's task worker with its scheduler."""
    return Process([sys.executable, "manage.py", "worker", *extra], env, log)


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
