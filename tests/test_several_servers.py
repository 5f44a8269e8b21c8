"""Two web servers and two task workers over one database, one of each killed mid-load.

Agents assert, re-assert and recall over REST and MCP; a steward admits,
rules on conflicts, reverts automatic changes and withdraws episodes; the
workers maintain the store. Half-way through, one web server and one worker
are killed with SIGKILL (as the OOM killer or a lost machine would) and
started again. Afterwards every write that was answered 2xx is in the store,
no periodic job ran twice in one period, and ``manage.py doctor`` finds
nothing.

``CLAIMGRAPH_SOAK_SECONDS`` sets how long the load runs (default 40 s, for
``make test``); a longer soak: ``CLAIMGRAPH_SOAK_SECONDS=900 .venv/bin/pytest
tests/test_several_servers.py``.
"""

import itertools
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import httpx2
import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from accounts.actions import issue_token
from memories.maintenance.tasks import PeriodicJob
from memories.store.models import Fact, PeriodicRun, Scope, TouchedSlot, WorkerHeartbeat
from memories.store.roles import STEWARDS_GROUP
from notifications.worker import PERIODIC_JOBS
from tests.conftest import make_user
from tests.deadlines import wait_until
from tests.processes import (
    ROOT,
    free_port,
    listening,
    production_environment,
    task_worker,
    web_server,
)

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

SOAK_SECONDS = float(os.environ.get("CLAIMGRAPH_SOAK_SECONDS", "40"))
SUBJECTS = ["PaySvc", "AuthService", "billing", "search", "gateway"]
VALUES = ["1.0", "1.1", "2.0"]
SOURCES = ["code", "user-assertion", "session-log", "agent-note"]
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}


@dataclass
class Tally:
    """What the clients saw: the facts written (2xx answers) and every other answer."""

    written: set[str] = field(default_factory=set)
    answers: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def saw(self, kind: str, status: int, body: bytes) -> None:
        with self.lock:
            self.answers[(kind, status)] += 1
            if status >= 500:
                self.failures.append(f"{kind}: {status} {body[:300]!r}")


class Site:
    """The web servers a client may reach, as a load balancer sees them."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.down: set[int] = set()
        self.turn = itertools.count()

    def request(self, client: httpx2.Client, method: str, path: str, **kwargs) -> httpx2.Response:
        """Send to the next live server; a refused or dropped connection goes to another."""
        for _ in range(4 * len(self.ports)):
            port = self.ports[next(self.turn) % len(self.ports)]
            if port in self.down:
                continue
            try:
                return client.request(method, f"http://127.0.0.1:{port}{path}", **kwargs)
            except httpx2.TransportError:
                time.sleep(0.05)
        raise RuntimeError("no web server answered")


def agent_load(site: Site, secret: str, tally: Tally, stop: threading.Event, seed: int) -> None:
    chance = random.Random(seed)
    headers = {"Authorization": f"Bearer {secret}"}
    with httpx2.Client(headers=headers, timeout=60) as client:
        for n in itertools.count():
            if stop.is_set():
                return
            body = {
                "scope": "soak",
                "subject": chance.choice(SUBJECTS),
                "predicate": chance.choice(["core/has-version", "core/uses"]),
                "object": chance.choice(VALUES),
                "source_type": chance.choice(SOURCES),
                "episode": f"run-{seed}-{n // 20}",
            }
            if n % 2:
                answer = site.request(client, "POST", "/api/v1/facts", json=body)
                tally.saw("REST assert", answer.status_code, answer.content)
                if answer.status_code in (200, 201):
                    with tally.lock:
                        tally.written.add(answer.json()["fact"]["id"])
            else:
                answer = site.request(
                    client, "POST", "/mcp/", json=_tool(n, "assert_fact", body), headers=MCP_HEADERS
                )
                tally.saw("MCP assert", answer.status_code, answer.content)
                result = answer.json().get("result", {}) if answer.status_code == 200 else {}
                if answer.status_code == 200 and not result.get("isError"):
                    with tally.lock:
                        tally.written.add(result["structuredContent"]["fact"]["id"])
            if n % 5 == 0:
                question = {"scope": "soak", "subject": chance.choice(SUBJECTS)}
                answer = site.request(
                    client, "POST", "/mcp/", json=_tool(n, "recall", question), headers=MCP_HEADERS
                )
                tally.saw("MCP recall", answer.status_code, answer.content)
                answer = site.request(client, "GET", "/api/v1/truth", params=question)
                tally.saw("REST recall", answer.status_code, answer.content)


def _tool(n: int, name: str, arguments: dict) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def steward_load(site: Site, secret: str, tally: Tally, stop: threading.Event) -> None:
    """Rules on what waits: verdicts, conflicts, automatic changes, now and then an episode."""
    chance = random.Random(7)
    with httpx2.Client(headers={"Authorization": f"Bearer {secret}"}, timeout=60) as client:
        for n in itertools.count():
            if stop.is_set():
                return
            conflicts = site.request(
                client, "GET", "/api/v1/conflicts", params={"scope": "soak", "status": "open"}
            )
            tally.saw("conflicts", conflicts.status_code, conflicts.content)
            for conflict in conflicts.json()["results"][:2] if conflicts.status_code == 200 else []:
                action = chance.choice(["keep", "coexist", "dismiss"])
                ruling = {"action": action, "reason": "soak ruling"}
                if action == "keep":
                    ruling["keep"] = [conflict["facts"][0]["id"]]
                answer = site.request(
                    client, "POST", f"/api/v1/conflicts/{conflict['id']}/resolve", json=ruling
                )
                tally.saw("resolve", answer.status_code, answer.content)
                for fact in conflict["facts"]:
                    answer = site.request(
                        client,
                        "POST",
                        f"/api/v1/facts/{fact['id']}/admissions",
                        json={"verdict": "admitted", "ground": "soak"},
                    )
                    tally.saw("verdict", answer.status_code, answer.content)
            changes = site.request(client, "GET", "/api/v1/changes", params={"scope": "soak"})
            tally.saw("changes", changes.status_code, changes.content)
            if changes.status_code == 200 and changes.json()["results"]:
                change = chance.choice(changes.json()["results"])
                answer = site.request(
                    client,
                    "POST",
                    f"/api/v1/changes/{change['id']}/revert",
                    json={"reason": "soak revert"},
                )
                tally.saw("revert", answer.status_code, answer.content)
            if n % 10 == 9:
                episode = f"run-{chance.randrange(4)}-{chance.randrange(3)}"
                withdrawal = {"scope": "soak", "reason": "soak withdrawal"}
                path = f"/api/v1/episodes/{episode}/withdraw"
                answer = site.request(client, "POST", path, json={**withdrawal, "dry_run": True})
                tally.saw("withdraw", answer.status_code, answer.content)
                if answer.status_code == 200:
                    token = answer.json()["token"]
                    answer = site.request(
                        client, "POST", path, json={**withdrawal, "confirm": token}
                    )
                    tally.saw("withdraw", answer.status_code, answer.content)
            time.sleep(0.2)


def test_two_servers_and_two_workers_survive_a_kill_each_and_keep_every_answered_write(
    tmp_path: Path,
):
    soak = Scope.objects.create(name="soak")
    steward = make_user("soak-steward")
    steward.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    agents = []
    for n in range(4):
        agent = make_user(f"soak-agent-{n}")
        soak.members.add(agent)
        agents.append(issue_token(actor=agent, name="soak")[1])
    steward_secret = issue_token(actor=steward, name="soak")[1]

    env = production_environment(
        CLAIMGRAPH_API_WRITE_RATE="0",
        CLAIMGRAPH_HEARTBEAT_SECONDS="1",
        CLAIMGRAPH_HEARTBEAT_STALE_SECONDS="6",
        CLAIMGRAPH_CRAWL_SECONDS="3",
        CLAIMGRAPH_LOG_LEVEL="ERROR",
    )
    ports = [free_port(), free_port()]
    servers = [web_server(port, env, tmp_path / f"web-{port}.log") for port in ports]
    workers = [task_worker(env, tmp_path / f"worker-{n}.log") for n in range(2)]
    tally, stop = Tally(), threading.Event()
    site = Site(ports)
    clients = [
        threading.Thread(target=agent_load, args=(site, secret, tally, stop, n))
        for n, secret in enumerate(agents)
    ]
    clients.append(threading.Thread(target=steward_load, args=(site, steward_secret, tally, stop)))
    try:
        for process in (*servers, *workers):
            process.start()
        wait_until(lambda: all(listening(port) for port in ports), what="both web servers")
        for client in clients:
            client.start()
        time.sleep(SOAK_SECONDS / 2)

        # One web server and one worker die at once; the balancer notices the server.
        site.down.add(ports[0])
        servers[0].kill()
        workers[0].kill()
        time.sleep(2)
        servers[0].start()
        workers[0].start()
        wait_until(lambda: listening(ports[0]), what="the restarted web server")
        site.down.discard(ports[0])
        time.sleep(SOAK_SECONDS / 2)
    finally:
        stop.set()
        for client in clients:
            client.join(timeout=120)
    try:
        # The workers finish what the load left them and take back what the
        # killed one left; then they stop as a deploy stops them.
        wait_until(_maintained, what="the workers to drain the touched slots")
        wait_until(_no_worker_lost, what="the live workers to take back the killed one's work")
    finally:
        for process in (*servers, *workers):
            process.stop()

    print("answers:", _dump(tally))  # shown with -s: what the load did
    assert not tally.failures, tally.failures[:5]
    assert sum(count for (kind, _), count in tally.answers.items() if "assert" in kind) > 50
    assert tally.written, "no write was answered 2xx"
    found = set(Fact.objects.filter(pk__in=tally.written).values_list("pk", flat=True))
    assert {str(pk) for pk in found} == tally.written, "a write answered 2xx is missing"
    for job in PERIODIC_JOBS:
        assert _runs_outside_their_period(job) == set(), job.name
    doctor = subprocess.run(
        [sys.executable, "manage.py", "doctor"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def _maintained() -> bool:
    return not TouchedSlot.objects.exists()


def _no_worker_lost() -> bool:
    silent = WorkerHeartbeat.objects.filter(stopped_at__isnull=True)
    return not silent.filter(beat_at__lt=timezone.now() - timedelta(seconds=6)).exists()


def _runs_outside_their_period(job: PeriodicJob) -> set[str]:
    """The job's tasks that are not one period's run: two runs of one period would be.

    Each kept ``PeriodicRun`` (one per period, the latest few) names one
    task; every task of the job enqueued since the oldest kept period must be
    one of them.
    """
    runs = PeriodicRun.objects.filter(job=job.name)
    oldest = runs.order_by("period_start").values_list("period_start", flat=True).first()
    if oldest is None:
        return set()
    tasks = DBTaskResult.objects.filter(task_path=job.task.module_path, enqueued_at__gte=oldest)
    claimed = set(runs.values_list("task_result_id", flat=True))
    return {str(pk) for pk in tasks.values_list("pk", flat=True) if pk not in claimed}


def _dump(tally: Tally) -> str:
    return json.dumps({f"{kind} {status}": n for (kind, status), n in tally.answers.items()})
