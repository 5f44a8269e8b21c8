"""Benchmark: POST /api/v1/facts under gunicorn vs. the raw minimal write transaction.

Not a test. Prints throughput, latency percentiles and the ratios (targets:
API rate >= 0.25 x raw rate, API p99 <= 10 x API p50).

- claimgraph API: gunicorn (gthread workers) serving the real WSGI
  application on 127.0.0.1, settings as in production (DEBUG off,
  DATABASE_URL with persistent connections), each client thread an agent
  with its own bearer token, asserting new facts (a new value on one of 40
  busy slots each time): token check, write allowance, validation, the whole
  write path, the Fact shape with its admission status, JSON out. Run twice:
  with the write limit on (CLAIMGRAPH_API_WRITE_RATE high enough never to
  refuse, so every write pays for its UPSERT) and off, to show what the
  limit costs.
- recall over MCP next to REST: the same question, ``GET /api/v1/truth``
  and MCP's ``recall`` tool (a ``tools/call`` POSTed to /mcp/), one after
  another on one ASGI server (gunicorn with uvicorn workers).
- raw: the same number of client threads, each with its own psycopg
  connection, running BEGIN; pg_advisory_xact_lock on the slot; SELECT the
  slot's rows with the value; INSERT one row; COMMIT — into ``raw_fact``,
  created ``LIKE memories_fact INCLUDING ALL`` with the same foreign keys.

The load generator is bounded: a fixed number of requests per side, a
timeout on every request, 127.0.0.1 only. The sides take turns, round by
round, and each side's best round counts.

    .venv/bin/python bench/api.py [--requests 3000] [--rounds 3] [--clients 8]
                                  [--workers 2] [--threads 4] [--worker-class gthread]
"""

import argparse
import json
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote

from _setup import ROOT, drop_database, raw_connection, server_environment, start_django

DATABASE = "bench_api"
SLOTS = 40

FOREIGN_KEYS = [
    ("scope_id", "memories_scope"),
    ("subject_id", "memories_entity"),
    ("predicate_id", "memories_predicate"),
    ("source_type_id", "memories_sourcetype"),
    ("author_id", "auth_user"),
]
RAW_SELECT = """
SELECT id, predicate_id, object_kind, object_key, epistemic, source_type_id, confidence,
       t_valid, t_invalid, evidence
  FROM raw_fact
 WHERE scope_id = %s AND subject_id = %s AND bucket = 'system'
   AND predicate_id = %s AND object_kind = 'literal' AND object_key = %s
"""
RAW_INSERT = """
INSERT INTO raw_fact (id, scope_id, subject_id, predicate_id, object_kind, object_lit,
    object_key, epistemic, source_type_id, confidence, episode, statement, evidence,
    author_id, bucket, t_valid, recorded_at, last_reinforced_at, invalidation_kind,
    invalidation_reason)
VALUES (%s, %s, %s, %s, 'literal', %s, %s, 'observation', %s, 0.8, '', '', '[]', %s,
    'system', now(), now(), now(), '', '')
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="writes per side")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--worker-class", default="gthread", help="gunicorn worker class")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (best counts)")
    options = parser.parse_args()
    start_django(DATABASE)
    try:
        run(options)
    finally:
        drop_database(DATABASE)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(options) -> None:
    from django.conf import settings
    from django.contrib.auth.models import User

    from accounts.actions import issue_token
    from memories.store.models import Entity, Predicate, Scope, SourceType

    scope = Scope.objects.create(member_source_types=None, name="bench")
    agents = []
    for n in range(options.clients):
        user = User.objects.create_user(f"agent-{n}")
        scope.members.add(user)
        agents.append(issue_token(actor=user, name="bench")[1])
    subject_ids = [
        Entity.objects.create(scope=scope, name=f"service-{n}", key=f"service-{n}").pk
        for n in range(SLOTS)
    ]
    uses = Predicate.objects.get(name="core/uses").pk
    code = SourceType.objects.get(name="code").pk
    author = User.objects.get(username="agent-0").pk

    raw = raw_connection()
    raw.execute("CREATE TABLE raw_fact (LIKE memories_fact INCLUDING ALL)")
    for column, parent in FOREIGN_KEYS:
        raw.execute(
            f"ALTER TABLE raw_fact ADD FOREIGN KEY ({column}) REFERENCES {parent}"
            " DEFERRABLE INITIALLY DEFERRED"
        )
    raw.commit()
    raw.close()

    db = settings.DATABASES["default"]
    url = (
        f"postgresql://{db['USER']}@{quote(db['HOST'], safe='')}:{db['PORT'] or 5432}/{db['NAME']}"
    )
    # Both servers stay up; the sides take turns round by round and each
    # side's best round counts, so a burst of load from elsewhere on the
    # machine hurts all alike.
    per_round = options.requests // options.rounds
    best: dict[str, dict] = {}
    with Gunicorn(options, url, "1000000") as limited, Gunicorn(options, url, "0") as unlimited:
        ports = {"API, write limit on": limited, "API, write limit off": unlimited}
        for port in ports.values():
            warm(port, agents[0], 50, tag=f"warm-{port}")
        for round_number in range(options.rounds):
            for name, port in ports.items():
                result = load_api(port, agents, per_round, tag=f"{port}-{round_number}")
                best[name] = max(best.get(name, result), result, key=lambda r: r["rate"])
            result = load_raw(
                options.clients, per_round, scope.pk, subject_ids, uses, code, author, round_number
            )
            name = "raw transaction"
            best[name] = max(best.get(name, result), result, key=lambda r: r["rate"])
    results = best
    report(results, options)
    allowance_cost(agents[-1])
    recall_over_mcp_and_rest(options, url, agents[0], scope)


def recall_over_mcp_and_rest(options, url: str, secret: str, scope, count: int = 500) -> None:
    """One recall, sequentially, over REST and as MCP's ``recall`` tool, on one ASGI server.

    The same question (a subject's current truth, 20 admitted facts) from the
    same account, each side over one persistent connection: ``GET
    /api/v1/truth`` against a JSON-RPC ``tools/call`` POSTed to /mcp/.
    """
    from django.contrib.auth.models import Group, User

    from admissions.actions import record_verdict
    from memories.store.roles import STEWARDS_GROUP
    from memories.write.actions import assert_fact

    steward = User.objects.create_user("bench-steward")
    steward.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    for n in range(20):
        written = assert_fact(actor=steward, data={**fact(n * SLOTS, "recall"), "confidence": 0.9})
        record_verdict(actor=steward, fact_id=written.fact.pk, verdict="admitted", ground="bench")
    question = {"scope": scope.name, "subject": "service-0"}

    def rest(port: int) -> bytes:
        query = "&".join(f"{key}={quote(value)}" for key, value in question.items())
        return (
            f"GET /api/v1/truth?{query} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {secret}\r\n\r\n"
        ).encode()

    def mcp(port: int, n: int) -> bytes:
        payload = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": question},
            }
        ).encode()
        return (
            f"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {secret}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {len(payload)}\r\n\r\n"
        ).encode() + payload

    def timed(port: int, sides: list[list[bytes]]) -> list[list[float]]:
        # The sides take turns request by request, so a burst of load from
        # elsewhere on the machine hurts both alike.
        conns = [Connection(port) for _ in sides]
        latencies: list[list[float]] = [[] for _ in sides]
        for turn in zip(*sides, strict=True):
            for conn, times, request in zip(conns, latencies, turn, strict=True):
                started = time.perf_counter()
                status, body = conn.exchange(request)
                times.append(time.perf_counter() - started)
                assert status == 200 and b"service-0" in body, (status, body[:300])
        for conn in conns:
            conn.close()
        return latencies

    with Gunicorn(options, url, "0", worker_class="uvicorn_worker.UvicornWorker") as port:
        sides = [[rest(port)] * count, [mcp(port, n) for n in range(count)]]
        timed(port, [side[:50] for side in sides])  # warm both
        rest_times, mcp_times = timed(port, sides)
    rest_ms, mcp_ms = (1000 * statistics.median(times) for times in (rest_times, mcp_times))
    print(
        f"recall of 20 facts, {count} of each taking turns, gunicorn {options.workers} uvicorn"
        f" workers: REST p50 {rest_ms:.2f} ms, MCP p50 {mcp_ms:.2f} ms"
        f" ({mcp_ms / rest_ms:.2f} x REST)"
    )


def allowance_cost(secret: str, count: int = 2000) -> None:
    """The write limit on its own: one UPSERT per write, next to the cheapest round trip."""
    from django.db import connection

    from accounts.tokens import spend_write, token_for_secret

    token = token_for_secret(secret)
    with connection.cursor() as cursor:
        started = time.perf_counter()
        for _ in range(count):
            cursor.execute("SELECT 1")
        round_trip = (time.perf_counter() - started) / count
    started = time.perf_counter()
    for _ in range(count):
        spend_write(token, per_minute=10_000_000)
    spent = (time.perf_counter() - started) / count
    print(
        f"write allowance alone, one connection: {spent * 1e6:.0f} us per write "
        f"(SELECT 1 round trip: {round_trip * 1e6:.0f} us)"
    )


class Gunicorn:
    """gunicorn serving the application on a free loopback port, for one measurement."""

    def __init__(
        self, options, database_url: str, write_rate: str, worker_class: str | None = None
    ) -> None:
        self.options = options
        self.worker_class = worker_class or options.worker_class
        self.env = server_environment(database_url, write_rate=write_rate)
        self.port = free_port()

    def __enter__(self) -> int:
        gunicorn = Path(sys.executable).parent / "gunicorn"
        self.process = subprocess.Popen(
            [
                str(gunicorn),
                # uvicorn's workers serve the ASGI application (MCP included).
                "claimgraph_site.asgi:application"
                if "uvicorn" in self.worker_class.lower()
                else "claimgraph_site.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(self.options.workers),
                "--worker-class",
                self.worker_class,
                "--threads",
                str(self.options.threads),
                "--keep-alive",
                "30",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=self.env,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self.port
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError("gunicorn exited") from None
                time.sleep(0.2)
        raise RuntimeError("gunicorn did not start")

    def __exit__(self, *exc) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Connection:
    """One persistent HTTP/1.1 connection to the server, for one client thread.

    The load generator shares the two cores with gunicorn and PostgreSQL, so
    its own cost per request counts against the API: ``http.client`` parses
    every response's headers with the email package. This client sends a
    request prepared before the clock started (a distinct fact each time) and
    reads each whole response itself: the status line, the headers up to the
    blank line, then exactly Content-Length bytes of body.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None
        self.pending = b""

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self.pending = sock, b""
        return sock

    def exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send one request; return the response's status and its whole body."""
        sock = self.sock or self._connect()
        sock.sendall(request)
        data = self.pending
        while (end := data.find(b"\r\n\r\n")) < 0:
            data += self._receive(sock)
        head = data[:end]
        status = int(head[9:12])
        length = _CONTENT_LENGTH.search(head)
        if length is None:
            raise RuntimeError(f"response without Content-Length: {head!r}")
        total = end + 4 + int(length.group(1))
        while len(data) < total:
            data += self._receive(sock)
        body, self.pending = data[end + 4 : total], data[total:]
        if _CLOSE.search(head):
            self.close()
        return status, body

    @staticmethod
    def _receive(sock: socket.socket) -> bytes:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection mid-response")
        return chunk

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(\d+)", re.IGNORECASE)
_CLOSE = re.compile(rb"\r\nconnection:[ \t]*close", re.IGNORECASE)


def post_request(port: int, secret: str, body: dict) -> bytes:
    """The bytes of one ``POST /api/v1/facts``, ready to send."""
    payload = json.dumps(body).encode()
    head = (
        "POST /api/v1/facts HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\n"
        f"Authorization: Bearer {secret}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n"
        "\r\n"
    )
    return head.encode() + payload


def fact(i: int, tag: str) -> dict:
    return {
        "scope": "bench",
        "subject": f"service-{i % SLOTS}",
        "predicate": "core/uses",
        "object": f"library-{tag}-{i}",
        "source_type": "code",
    }


def warm(port: int, secret: str, count: int, tag: str) -> None:
    conn = Connection(port)
    for i in range(count):
        status, body = conn.exchange(post_request(port, secret, fact(i, tag)))
        assert status == 201, (status, body)
    conn.close()


def load_api(port: int, agents: list[str], total: int, tag: str) -> dict:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    per_client = total // len(agents)
    barrier = threading.Barrier(len(agents) + 1)

    def client(n: int) -> None:
        conn = Connection(port)
        requests = [
            post_request(port, agents[n], fact(n * per_client + i, tag)) for i in range(per_client)
        ]
        mine, seen = [], {}
        barrier.wait()
        for request in requests:
            started = time.perf_counter()
            status, _body = conn.exchange(request)
            mine.append(time.perf_counter() - started)
            seen[status] = seen.get(status, 0) + 1
        conn.close()
        with lock:
            latencies.extend(mine)
            for status, count in seen.items():
                statuses[status] = statuses.get(status, 0) + count

    threads = [threading.Thread(target=client, args=(n,)) for n in range(len(agents))]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return summary(latencies, elapsed, statuses)


def load_raw(
    clients: int, total: int, scope_id, subject_ids, uses, code, author, round_number: int
) -> dict:
    latencies: list[float] = []
    lock = threading.Lock()
    per_client = total // clients
    barrier = threading.Barrier(clients + 1)

    def client(n: int) -> None:
        conn = raw_connection()
        mine = []
        barrier.wait()
        for i in range(per_client):
            k = n * per_client + i
            subject = subject_ids[k % SLOTS]
            value = f"library-raw-{round_number}-{k}"
            started = time.perf_counter()
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    [f"slot:{scope_id}:{subject}:core/uses"],
                )
                conn.execute(RAW_SELECT, [scope_id, subject, uses, value]).fetchall()
                conn.execute(
                    RAW_INSERT, [uuid.uuid4(), scope_id, subject, uses, value, value, code, author]
                )
            mine.append(time.perf_counter() - started)
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return summary(latencies, elapsed, {200: len(latencies)})


def summary(latencies: list[float], elapsed: float, statuses: dict[int, int]) -> dict:
    ordered = sorted(latencies)

    def percentile(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000

    return {
        "count": len(ordered),
        "rate": len(ordered) / elapsed,
        "p50": percentile(0.50),
        "p90": percentile(0.90),
        "p99": percentile(0.99),
        "mean": statistics.fmean(ordered) * 1000,
        "statuses": statuses,
    }


def report(results: dict, options) -> None:
    print(
        f"clients {options.clients}, {options.requests} writes per side in {options.rounds} "
        f"rounds (best round counts), gunicorn {options.workers} workers x "
        f"{options.threads} threads ({options.worker_class})"
    )
    print(f"{'side':26s} {'writes/s':>9s} {'p50 ms':>8s} {'p90 ms':>8s} {'p99 ms':>8s}  statuses")
    for name, r in results.items():
        print(
            f"{name:26s} {r['rate']:9.0f} {r['p50']:8.2f} {r['p90']:8.2f} {r['p99']:8.2f}  "
            f"{dict(sorted(r['statuses'].items()))}"
        )
    raw = results["raw transaction"]["rate"]
    for name in ("API, write limit on", "API, write limit off"):
        r = results[name]
        print(
            f"{name}: {r['rate'] / raw:.3f} x raw rate (target >= 0.25), "
            f"p99/p50 = {r['p99'] / r['p50']:.1f} (target <= 10)"
        )
    on, off = results["API, write limit on"], results["API, write limit off"]
    print(
        f"write limit cost: {1000 / on['rate'] - 1000 / off['rate']:+.3f} ms of server time "
        f"per write ({on['rate'] / off['rate']:.2f} x the rate without it)"
    )


if __name__ == "__main__":
    main()
