"""Benchmark: the site served as production serves it, 16 clients at once, against raw PostgreSQL.

Not a test. Each serving design under measurement runs as its own gunicorn
(``gunicorn.conf.py``'s settings, DEBUG off, the bench database), with one
``manage.py worker`` beside them as production runs. ``wrk`` (a C load
generator from Debian, so the client costs the measured cores little) drives
16 connections for a fixed time at each of:

- **writes**: ``POST /api/v1/facts``, each a new fact about a new subject,
  from 16 agents (one bearer token each, the write limit on);
- **REST recall**: ``GET /api/v1/truth`` of one subject (20 admitted facts);
- **MCP recall**: the same question as MCP's ``recall`` tool
  (``tools/call`` POSTed to /mcp/);

and ``pgbench`` runs the raw write over 16 connections: BEGIN, an advisory
lock, a SELECT of the slot, one INSERT into a copy of the fact table,
COMMIT. The sides take turns round by round, so the store grows between
rounds as it does in service, and a burst of load elsewhere on the machine
falls on every side alike. Each round's figures print as they come; the
summary compares each design's median round with the raw median.

    .venv/bin/python bench/served.py [--designs uvicorn,gthread] [--rounds 3] [--seconds 12]
                                     [--clients 16] [--workers 2] [--no-worker]

Targets (issue 27): writes >= 0.25 x raw; REST recall >= writes; MCP recall
>= 0.8 x REST recall; p99 <= 5 x p50; no answer other than 2xx.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from _setup import ROOT, drop_database, raw_connection, server_environment, start_django

DATABASE = "bench_served"
RECALL_FACTS = 20
PROTOCOL_VERSION = "2025-06-18"

# Each serving design: the command that serves the site on {port} with {workers}
# processes, and whether it serves MCP (its transport is the SDK's ASGI app).
GUNICORN = [
    "{bin}/gunicorn",
    "--config",
    "gunicorn.conf.py",
    "--bind",
    "127.0.0.1:{port}",
    "--workers",
    "{workers}",
]


@dataclass(frozen=True)
class Design:
    command: list[str]
    serves_mcp: bool


DESIGNS = {
    # As production runs: gunicorn.conf.py's uvicorn workers, ASGI, MCP mounted.
    "uvicorn": Design([*GUNICORN, "claimgraph_site.asgi:application"], serves_mcp=True),
    # The same with uvicorn's pure-Python HTTP parser and asyncio's own loop,
    # what it runs without httptools and uvloop installed.
    "uvicorn-h11": Design(
        [
            *GUNICORN,
            "--worker-class",
            "uvicorn_worker.UvicornH11Worker",
            "claimgraph_site.asgi:application",
        ],
        serves_mcp=True,
    ),
    # Threaded WSGI: each request a thread of a small pool, each thread its own
    # persistent connection. The console and the REST API only.
    "gthread": Design(
        [
            *GUNICORN,
            "--worker-class",
            "gthread",
            "--threads",
            "{threads}",
            "claimgraph_site.wsgi:application",
        ],
        serves_mcp=False,
    ),
}
SIDES = ("writes", "REST recall", "MCP recall")


@dataclass(frozen=True)
class Load:
    """What one wrk run measured."""

    requests: int
    seconds: float
    non_2xx: int
    errors: int
    p50_ms: float
    p99_ms: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def __str__(self) -> str:
        bad = f", {self.non_2xx} non-2xx" if self.non_2xx else ""
        bad += f", {self.errors} socket errors" if self.errors else ""
        return (
            f"{self.rate:7.0f}/s  p50 {self.p50_ms:6.1f} ms  p99 {self.p99_ms:6.1f} ms"
            f"  (p99/p50 {self.p99_ms / self.p50_ms:4.1f}){bad}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", default="uvicorn,gthread", help=", ".join(DESIGNS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=12, help="each side's time per round")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2, help="server processes per design")
    parser.add_argument("--threads", type=int, default=8, help="threads per WSGI process")
    parser.add_argument("--no-worker", action="store_true", help="no task worker beside")
    parser.add_argument("--sides", default=",".join(SIDES))
    options = parser.parse_args()
    designs = [name for name in options.designs.split(",") if name]
    unknown = sorted(set(designs) - set(DESIGNS))
    if unknown:
        parser.error(f"unknown designs: {', '.join(unknown)}")
    for tool in ("wrk", "pgbench"):
        if shutil.which(tool) is None:
            sys.exit(f"bench/served.py needs {tool}: apt-get install wrk postgresql-client")
    start_django(DATABASE)
    try:
        run(options, designs)
    finally:
        drop_database(DATABASE)


def run(options, designs: list[str]) -> None:
    world = prepare(options.clients)
    folder = Path(tempfile.mkdtemp(prefix="claimgraph-served-"))
    environment = server_environment(world["database_url"])
    results: dict[str, list[Load]] = {}
    worker = None
    servers = {}
    completed = False
    try:
        if not options.no_worker:
            worker = subprocess.Popen(
                [sys.executable, "manage.py", "worker"],
                cwd=ROOT,
                env=environment,
                stdout=(folder / "worker.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        for name in designs:
            servers[name] = Server(
                DESIGNS[name].command,
                environment,
                options.workers,
                options.threads,
                log=folder / f"{name}.log",
            )
        for server in servers.values():
            server.wait_until_up()
        raw_script = write_raw_script(folder, world)
        # A short unrecorded run of every side first: each server process
        # imports and connects on its first requests, not at start.
        pgbench(raw_script, world["pgbench_url"], options.clients, 2)
        for name, server in servers.items():
            for side, script in scripts(folder, world, -1).items():
                if side != "MCP recall" or DESIGNS[name].serves_mcp:
                    wrk(server.port, script, options.clients, 2)
        for round_number in range(options.rounds):
            print(f"-- round {round_number + 1} of {options.rounds}", flush=True)
            before = cpu_snapshot()
            raw = pgbench(raw_script, world["pgbench_url"], options.clients, options.seconds)
            split = cpu_split(before, cpu_snapshot(), options.seconds)
            results.setdefault("raw", []).append(raw)
            print(f"raw write (pgbench)          {raw}\n    cores: {split}", flush=True)
            for name, server in servers.items():
                for side, script in scripts(folder, world, round_number).items():
                    if side not in options.sides.split(","):
                        continue
                    if side == "MCP recall" and not DESIGNS[name].serves_mcp:
                        continue
                    before = cpu_snapshot()
                    load = wrk(server.port, script, options.clients, options.seconds)
                    split = cpu_split(before, cpu_snapshot(), load.seconds)
                    results.setdefault(f"{name} {side}", []).append(load)
                    print(f"{name:12} {side:12} {load}\n    cores: {split}", flush=True)
        completed = True
    finally:
        for server in servers.values():
            server.stop()
        if worker is not None:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
        if completed:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            print(f"the servers' and the worker's logs: {folder}", file=sys.stderr)
    if options.sides == ",".join(SIDES):
        summary(results, designs)


def cpu_snapshot() -> dict[int, tuple[str, float]]:
    """CPU seconds so far of every process on the machine, by the role it plays here."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            executable = os.readlink(entry / "exe")
        except OSError:
            continue
        if "postgres" in executable:
            role = "PostgreSQL"
        elif "gunicorn" in command or "granian" in command:
            role = "web"
        elif "manage.py worker" in command:
            role = "task worker"
        elif command.startswith(("wrk", "pgbench")):
            role = "load generator"
        else:
            role = "other"
        found[int(entry.name)] = (role, (int(fields[11]) + int(fields[12])) / ticks)
    return found


def cpu_split(before: dict, after: dict, seconds: float) -> str:
    """Cores each role used between two snapshots."""
    used: dict[str, float] = {}
    for pid, (role, total) in after.items():
        used[role] = used.get(role, 0.0) + total - before.get(pid, (role, 0.0))[1]
    return ", ".join(
        f"{role} {cores / seconds:.2f}"
        for role, cores in sorted(used.items(), key=lambda item: -item[1])
        if cores / seconds >= 0.01
    )


def summary(results: dict[str, list[Load]], designs: list[str]) -> None:
    def med(key: str) -> float | None:
        loads = results.get(key)
        return statistics.median(load.rate for load in loads) if loads else None

    raw = med("raw")
    print()
    print(f"raw write, median of rounds: {raw:.0f}/s")
    for name in designs:
        writes, rest, mcp = (med(f"{name} {side}") for side in SIDES)
        loads = [load for side in SIDES for load in results.get(f"{name} {side}", [])]
        rows = [
            ("writes / raw", writes / raw, ">= 0.25"),
            ("REST recall / writes", rest / writes, ">= 1.0"),
            ("MCP recall / REST recall", mcp / rest if mcp else None, ">= 0.8"),
            ("worst p99 / p50", max(load.p99_ms / load.p50_ms for load in loads), "<= 5"),
            ("answers other than 2xx", sum(load.non_2xx + load.errors for load in loads), "== 0"),
        ]
        mcp_text = f"{mcp:.0f}/s" if mcp else "not served"
        print(f"{name}: writes {writes:.0f}/s, REST recall {rest:.0f}/s, MCP recall {mcp_text}")
        for label, value, target in rows:
            if value is None:
                print(f"  {label:26} {'-':>8}  target {target:7}  n/a")
            else:
                print(f"  {label:26} {value:8.3f}  target {target:7}  {verdict(value, target)}")


def verdict(value: float, target: str) -> str:
    sign, number = target.split()
    number = float(number)
    ok = {">=": value >= number, "<=": value <= number, "==": value == number}[sign]
    return "PASS" if ok else "FAIL"


# --- the world the load runs in -------------------------------------------------------------


def prepare(clients: int) -> dict:
    from django.conf import settings
    from django.contrib.auth.models import Group, User

    from accounts.actions import issue_token
    from admissions.actions import record_verdict
    from memories.store.models import Entity, Predicate, Scope, SourceType
    from memories.store.roles import STEWARDS_GROUP
    from memories.write.actions import assert_fact

    scope = Scope.objects.create(member_source_types=None, name="bench")
    tokens = []
    for n in range(clients):
        user = User.objects.create_user(f"agent-{n}")
        scope.members.add(user)
        tokens.append(issue_token(actor=user, name="bench")[1])
    steward = User.objects.create_user("bench-steward")
    steward.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    for n in range(RECALL_FACTS):
        written = assert_fact(
            actor=steward,
            data={
                "scope": "bench",
                "subject": "recalled",
                "predicate": "core/uses",
                "object": f"library-{n}",
                "source_type": "code",
                "confidence": 0.9,
            },
        )
        record_verdict(actor=steward, fact_id=written.fact.pk, verdict="admitted", ground="bench")

    raw = raw_connection()
    raw.execute("CREATE TABLE raw_fact (LIKE memories_fact INCLUDING ALL)")
    raw.commit()
    raw.close()
    db = settings.DATABASES["default"]
    host = quote(db["HOST"] or "127.0.0.1", safe="")
    url = f"postgresql://{db['USER']}@{host}:{db['PORT'] or 5432}/{db['NAME']}"
    return {
        "tokens": tokens,
        "database_url": url,
        "pgbench_url": url,
        "scope_id": scope.pk,
        "subject_id": Entity.objects.get(name="recalled").pk,
        "predicate_id": Predicate.objects.get(name="core/has-version").pk,
        "source_type_id": SourceType.objects.get(name="code").pk,
        "author_id": steward.pk,
    }


class Server:
    """One serving design on a free loopback port."""

    def __init__(
        self,
        command: list[str],
        environment: dict[str, str],
        workers: int,
        threads: int,
        *,
        log: Path,
    ):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        values = {
            "bin": str(Path(sys.executable).parent),
            "port": self.port,
            "workers": workers,
            "threads": threads,
        }
        arguments = [part.format(**values) for part in command]
        # The servers' own output goes to a file, kept when the run fails.
        self.process = subprocess.Popen(
            arguments, cwd=ROOT, env=environment, stdout=log.open("w"), stderr=subprocess.STDOUT
        )

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("gunicorn exited")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("gunicorn did not start")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


# --- the load --------------------------------------------------------------------------------

# wrk's Lua: one request function per side, a report of the run as one JSON line.
LUA_COMMON = """
local tokens = {%(tokens)s}
local counter = 0
local thread_number = 0
function setup(thread)
  thread:set("thread_number", thread_number)
  thread_number = thread_number + 1
end
function done(summary, latency, requests)
  io.write(string.format(
    'RESULT {"requests": %%d, "micros": %%d, "non_2xx": %%d, "errors": %%d, '
    .. '"p50": %%d, "p99": %%d}\\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
local function token()
  counter = counter + 1
  return tokens[(counter + thread_number) %% #tokens + 1]
end
"""

LUA_WRITE = """
request = function()
  local bearer = token()
  local body = string.format(
    '{"scope": "bench", "subject": "svc-%(round)d-%%d-%%d", "predicate": "core/has-version",'
    .. ' "object": "1.%%d", "source_type": "code"}', thread_number, counter, counter)
  return wrk.format("POST", "/api/v1/facts",
    {["Authorization"] = "Bearer " .. bearer, ["Content-Type"] = "application/json"}, body)
end
"""

LUA_REST_RECALL = """
request = function()
  return wrk.format("GET", "/api/v1/truth?scope=bench&subject=recalled",
    {["Authorization"] = "Bearer " .. token()})
end
"""

LUA_MCP_RECALL = """
request = function()
  local body = string.format(
    '{"jsonrpc": "2.0", "id": %%d, "method": "tools/call", "params": {"name": "recall",'
    .. ' "arguments": {"scope": "bench", "subject": "recalled"}}}', counter)
  return wrk.format("POST", "/mcp/", {
    ["Authorization"] = "Bearer " .. token(),
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream",
    ["MCP-Protocol-Version"] = "%(protocol)s"}, body)
end
"""


def scripts(folder: Path, world: dict, round_number: int) -> dict[str, Path]:
    tokens = ", ".join(json.dumps(token) for token in world["tokens"])
    found = {}
    for side, body in (
        ("writes", LUA_WRITE),
        ("REST recall", LUA_REST_RECALL),
        ("MCP recall", LUA_MCP_RECALL),
    ):
        path = folder / f"{side.replace(' ', '-')}-{round_number}.lua"
        text = (LUA_COMMON + body) % {
            "tokens": tokens,
            "round": round_number,
            "protocol": PROTOCOL_VERSION,
        }
        path.write_text(text)
        found[side] = path
    return found


def wrk(port: int, script: Path, clients: int, seconds: int) -> Load:
    finished = subprocess.run(
        [
            "wrk",
            "--threads",
            "2",
            "--connections",
            str(clients),
            "--duration",
            f"{seconds}s",
            "--timeout",
            "30s",
            "--script",
            str(script),
            f"http://127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(line for line in finished.stdout.splitlines() if line.startswith("RESULT "))
    found = json.loads(line.removeprefix("RESULT "))
    return Load(
        requests=found["requests"],
        seconds=found["micros"] / 1e6,
        non_2xx=found["non_2xx"],
        errors=found["errors"],
        p50_ms=found["p50"] / 1000,
        p99_ms=found["p99"] / 1000,
    )


RAW_SCRIPT = """\\set key random(1, 1000000000)
\\set value random(1, 1000000000)
BEGIN;
SELECT pg_advisory_xact_lock(:key);
SELECT id FROM raw_fact WHERE scope_id = %(scope_id)d AND subject_id = :key
  AND bucket = 'system' AND predicate_id = %(predicate_id)d AND object_kind = 'literal'
  AND object_key = :value::text;
INSERT INTO raw_fact (id, scope_id, subject_id, predicate_id, object_kind, object_lit,
    object_key, epistemic, source_type_id, confidence, episode, statement, evidence,
    author_id, bucket, t_valid, recorded_at, last_reinforced_at, invalidation_kind,
    invalidation_reason)
  VALUES (gen_random_uuid(), %(scope_id)d, :key, %(predicate_id)d, 'literal',
    :value::text, :value::text, 'observation', %(source_type_id)d, 0.8, '', '', '[]',
    %(author_id)d, 'system', now(), now(), now(), '', '');
COMMIT;
"""


def write_raw_script(folder: Path, world: dict) -> Path:
    path = folder / "raw.sql"
    path.write_text(RAW_SCRIPT % world)
    return path


def pgbench(script: Path, url: str, clients: int, seconds: int) -> Load:
    finished = subprocess.run(
        [
            "pgbench",
            "--no-vacuum",
            "--client",
            str(clients),
            "--jobs",
            "2",
            "--time",
            str(seconds),
            "--protocol",
            "prepared",
            "--file",
            str(script),
            "--report-per-command",
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    out = finished.stdout
    processed = int(re.search(r"number of transactions actually processed: (\d+)", out)[1])
    failed = re.search(r"number of failed transactions: (\d+)", out)
    average = float(re.search(r"latency average = ([0-9.]+) ms", out)[1])
    return Load(
        requests=processed,
        seconds=float(seconds),
        non_2xx=int(failed[1]) if failed else 0,
        errors=0,
        p50_ms=average,
        p99_ms=average,
    )


if __name__ == "__main__":
    main()
