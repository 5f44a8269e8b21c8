"""Benchmark: an agent's reads next to one write, in one process (issue #14, item 3).

Not a test. One agent account asks, over Django's handler (the test client,
every middleware, DEBUG off) and over MCP's Streamable HTTP app (called as
ASGI in the same process, stateless, as ``/mcp/`` serves it):

- ``GET /api/v1/facts/{id}`` for the store's sample facts;
- recall of one sample subject (8 to 20 values): ``GET /api/v1/truth`` and MCP's
  ``recall`` tool (a JSON-RPC ``tools/call``);
- ``GET /api/v1/conflicts`` of the conflict scope, 50 open conflicts a page;

taking turns request by request with ``POST /api/v1/facts``, which writes a
new value into one of the sample subjects' busy ``many`` slots. Each read's
figure is the larger of two ratios over the same rounds, its p95 to the
POST's p95 and its median to the POST's median (targets: GET fact ≤ 0.5,
each recall ≤ 1.0, conflicts ≤ 3): on a box whose commits now and then stall,
the POST's p95 is a tail of slow flushes, and a read measured against that
tail alone would pass without being cheaper (docs/bench-log/2026-12-02-make-bench.md). And its
statements per request, counted at psycopg (so the token check, which runs
on a raw prepared cursor, is counted too). The conflicts list is also
counted at 5 and at 50 a page: the two counts must be equal.

``measure(store)`` is what ``bench/scale.py`` calls. For development the
script builds a small store of its own (a few thousand facts) and measures it:

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/x .venv/bin/python bench/reads.py
    .venv/bin/python bench/reads.py --facts 5000 --rounds 5 --database cgb_reads
    .venv/bin/python bench/reads.py --profile "GET fact"
"""

import argparse
import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from _figures import Figure, Store, p95
from _setup import drop_database, start_django

DATABASE = "cgb_reads"
PER_ROUND = 150
READS = ("GET fact", "recall REST", "recall MCP", "GET conflicts")
TARGETS = {"GET fact": 0.5, "recall REST": 1.0, "recall MCP": 1.0, "GET conflicts": 3.0}
MEASURES = {
    "GET fact": "GET /api/v1/facts/{id} / POST /api/v1/facts",
    "recall REST": "recall of one subject, GET /api/v1/truth / POST /api/v1/facts",
    "recall MCP": "recall of one subject, MCP tools/call recall / POST /api/v1/facts",
    "GET conflicts": "GET /api/v1/conflicts (50 a page) / POST /api/v1/facts",
}
WRITE_PREDICATE = "core/uses"


# --- counting statements ---------------------------------------------------------------


class StatementCounter:
    """Counts the statements psycopg sends, from any thread, while switched on."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()
        self._patched: list[tuple[type, Callable]] = []

    @contextmanager
    def counting(self) -> Iterator["StatementCounter"]:
        import psycopg

        self.count = 0
        counter = self
        for cls in {psycopg.Cursor, psycopg.ClientCursor}:
            original = cls.__dict__.get("execute")
            if original is None:
                continue

            def execute(cursor, *args, _original=original, **kwargs):
                with counter._lock:
                    counter.count += 1
                return _original(cursor, *args, **kwargs)

            cls.execute = execute
            self._patched.append((cls, original))
        try:
            yield self
        finally:
            for cls, original in self._patched:
                cls.execute = original
            self._patched.clear()


# --- MCP in process --------------------------------------------------------------------


class McpInProcess:
    """MCP's Streamable HTTP app with its session manager running on a loop of its own.

    Each call is one stateless POST to the app, as /mcp/ receives it behind
    the site: the tool's ORM work runs in Django's sync thread, as in
    production.
    """

    def __init__(self, secret: str) -> None:
        from api.mcp.http import mcp_http_app

        self.secret = secret
        self.mcp = mcp_http_app()
        self.loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        started.wait()

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)

        async def serve() -> None:
            from asgiref.sync import sync_to_async
            from django.db import connection

            # Django's sync thread may hold a connection to another database
            # (bench/scale.py measures two stores in one process).
            def close_connection() -> None:
                connection.close()  # the sync thread's own connection

            close = sync_to_async(close_connection, thread_sensitive=True)
            self._stop = asyncio.Event()
            await close()
            async with self.mcp.server.session_manager.run():
                started.set()
                await self._stop.wait()
            await close()

        self.loop.run_until_complete(serve())

    def close(self) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(timeout=30)

    def call(self, tool: str, arguments: dict[str, Any], n: int) -> tuple[int, bytes]:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        ).encode()
        future = asyncio.run_coroutine_threadsafe(self._post(body), self.loop)
        return future.result(timeout=60)

    async def _post(self, body: bytes) -> tuple[int, bytes]:
        headers = [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {self.secret}".encode()),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-protocol-version", b"2025-06-18"),
            (b"content-length", str(len(body)).encode()),
        ]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "https",
            "path": "/",
            "raw_path": b"/",
            "root_path": "",
            "query_string": b"",
            "headers": headers,
            "client": ("127.0.0.1", 40000),
            "server": ("testserver", 80),
        }
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.mcp.app(scope, receive, send)
        return status, b"".join(chunks)


# --- the requests ----------------------------------------------------------------------


@dataclass
class Requests:
    """The five kinds of request, each a callable answering (status, body)."""

    store: Store
    client: Any
    headers: dict[str, str]
    mcp: McpInProcess
    writes: list[dict[str, Any]]
    subjects: list[dict[str, str]]
    conflict_scope: str
    n: int = 0

    def post(self) -> tuple[int, bytes]:
        body = self.writes[self.n % len(self.writes)] | {"object": f"lib-{self.n}-{time.time_ns()}"}
        self.n += 1
        response = self.client.post(
            "/api/v1/facts",
            json.dumps(body),
            content_type="application/json",
            headers=self.headers,
            secure=True,
        )
        return response.status_code, response.content

    def get_fact(self) -> tuple[int, bytes]:
        fact_id = self.store.fact_ids[self.n % len(self.store.fact_ids)]
        self.n += 1
        response = self.client.get(f"/api/v1/facts/{fact_id}", headers=self.headers, secure=True)
        return response.status_code, response.content

    def recall_rest(self) -> tuple[int, bytes]:
        question = self.subjects[self.n % len(self.subjects)]
        self.n += 1
        response = self.client.get(
            f"/api/v1/truth?{urlencode(question)}", headers=self.headers, secure=True
        )
        return response.status_code, response.content

    def recall_mcp(self) -> tuple[int, bytes]:
        question = self.subjects[self.n % len(self.subjects)]
        self.n += 1
        status, body = self.mcp.call("recall", question, self.n)
        if status == 200 and b'"isError":true' in body:
            return 500, body
        return status, body

    def conflicts(self, limit: int = 50) -> tuple[int, bytes]:
        query = urlencode({"scope": self.conflict_scope, "status": "open", "limit": limit})
        response = self.client.get(f"/api/v1/conflicts?{query}", headers=self.headers, secure=True)
        return response.status_code, response.content

    def by_name(self) -> dict[str, Callable[[], tuple[int, bytes]]]:
        return {
            "POST": self.post,
            "GET fact": self.get_fact,
            "recall REST": self.recall_rest,
            "recall MCP": self.recall_mcp,
            "GET conflicts": self.conflicts,
        }


def prepare(store: Store) -> Requests:
    """Names for the store's ids, the write bodies, a client and the MCP app."""
    from django.test import Client

    from memories.store.models import Entity, Scope

    scopes = dict(Scope.objects.filter(pk__in=store.scope_ids).values_list("pk", "name"))
    entities = dict(
        Entity.objects.filter(pk__in=[entity for _, entity in store.subjects]).values_list(
            "pk", "name"
        )
    )
    subjects = [
        {"scope": scopes[scope], "subject": entities[entity]} for scope, entity in store.subjects
    ]
    writes = [
        {
            **subject,
            "predicate": WRITE_PREDICATE,
            "object_kind": "literal",
            "source_type": "agent-note",
        }
        for subject in subjects
    ]
    return Requests(
        store=store,
        client=Client(),
        headers={"Authorization": f"Bearer {store.agent_token}"},
        mcp=McpInProcess(store.agent_token),
        writes=writes,
        subjects=subjects,
        conflict_scope=Scope.objects.get(pk=store.conflict_scope_id).name,
    )


def _checked(name: str, answer: tuple[int, bytes]) -> None:
    status, body = answer
    expected = (200, 201) if name == "POST" else (200,)
    assert status in expected, (name, status, body[:400])


def statements(requests: Requests, name: str, call: Callable[[], tuple[int, bytes]]) -> int:
    counter = StatementCounter()
    call()  # once first: nothing a process reads once is counted
    with counter.counting():
        _checked(name, call())
    return counter.count


@contextmanager
def connections_kept() -> Iterator[None]:
    """Both sides on a connection kept across requests.

    Django's test client takes ``close_old_connections`` off the request
    signals, so the REST side never reconnects, whatever ``CONN_MAX_AGE``
    says. The MCP side closes as a served request does, so where
    ``CONN_MAX_AGE`` is 0 (the embedded database) each of its calls opened a
    new connection and prepared every statement again: 20+ ms that REST
    was never charged. Keeping the connection for the measurement puts the
    two sides on the same footing, that of a deployment with persistent
    connections (``DATABASE_URL``'s ``conn_max_age=60``). A pool keeps its
    own connections: left as it is.
    """
    from django.db import connections

    database = connections["default"].settings_dict
    if "pool" in database.get("OPTIONS", {}):
        yield
        return
    saved = database["CONN_MAX_AGE"]
    database["CONN_MAX_AGE"] = None
    try:
        yield
    finally:
        database["CONN_MAX_AGE"] = saved


def measure(store: Store, *, rounds: int = 3, per_round: int = PER_ROUND) -> list[Figure]:
    """Each read against the POST (p95 and median), taking turns request by request."""
    from django.test import override_settings

    # The write is charged as usual, against a limit the bench never reaches.
    with override_settings(CLAIMGRAPH_API_WRITE_RATE=1_000_000), connections_kept():
        return _measure(store, rounds=rounds, per_round=per_round)


def _measure(store: Store, *, rounds: int, per_round: int) -> list[Figure]:
    requests = prepare(store)
    try:
        calls = requests.by_name()
        counts = {name: statements(requests, name, call) for name, call in calls.items()}
        small = statements(requests, "GET conflicts", lambda: requests.conflicts(limit=5))
        for name, call in calls.items():  # warm every path
            for _ in range(10):
                _checked(name, call())
        times: dict[str, list[float]] = {name: [] for name in calls}
        for round_ in range(rounds):
            # Alternate which side goes first in each turn, round by round.
            order = list(calls.items())
            if round_ % 2:
                order = order[1:] + order[:1]
            for _ in range(per_round):
                for name, call in order:
                    started = time.perf_counter()
                    answer = call()
                    times[name].append(time.perf_counter() - started)
                    _checked(name, answer)
    finally:
        requests.mcp.close()
    ms = {name: 1000 * p95(values) for name, values in times.items()}
    medians = {name: 1000 * sorted(values)[len(values) // 2] for name, values in times.items()}
    figures = []
    for name in READS:
        detail = (
            f"p95 {ms[name]:.2f} ms vs {ms['POST']:.2f} ms (median {medians[name]:.2f} vs"
            f" {medians['POST']:.2f}); {counts[name]} statements vs {counts['POST']};"
            f" {len(times[name])} of each in {rounds} rounds"
        )
        # The worse of the two ratios: a heavy tail on either side moves only one.
        ratio = max(ms[name] / ms["POST"], medians[name] / medians["POST"])
        figures.append(
            Figure(
                measure=MEASURES[name],
                value=round(ratio, 3),
                target=f"<= {TARGETS[name]}",
                detail=detail,
                p95_ms={name: round(ms[name], 3)},
            )
        )
    figures.append(
        Figure(
            measure="GET /api/v1/conflicts statements, 5 vs 50 a page",
            value=abs(counts["GET conflicts"] - small),
            target="constant",
            detail=f"{small} statements at 5 a page, {counts['GET conflicts']} at 50",
        )
    )
    return figures


# --- a small store for development -----------------------------------------------------


def small_store(facts: int) -> Store:
    """A few thousand facts over five scopes, with sample facts, subjects and conflicts.

    Until ``bench/generate.py`` builds the real stores. Written through the
    actions, so every fact, record and conflict is what the write path makes.
    """
    from django.contrib.auth.models import Group, User

    from accounts.actions import issue_token
    from admissions.actions import record_verdict
    from memories.store.models import Entity, Scope
    from memories.store.roles import STEWARDS_GROUP
    from memories.write.actions import assert_fact

    steward = User.objects.create_user("bench-steward")
    steward.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    agent = User.objects.create_user("bench-agent")
    scopes = [Scope.objects.create(member_source_types=None, name=f"bench-{n}") for n in range(5)]
    for scope in scopes:
        scope.members.add(agent)
    _, secret = issue_token(actor=agent, name="bench")
    predicates = ["core/uses", "core/depends-on", "core/deployed-via"]
    fact_ids, subjects = [], []
    per_subject = 15
    written = 0
    n = 0
    while written < facts:
        scope = scopes[n % len(scopes)]
        subject = f"svc-{n}"
        for k in range(per_subject):
            body = {
                "scope": scope.name,
                "subject": subject,
                "predicate": predicates[k % len(predicates)],
                "object": f"thing-{k}",
                "source_type": "code",
                "confidence": 0.9,
            }
            fact = assert_fact(actor=steward, data=body).fact
            if k < 12:
                record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="bench")
            if k == 0:
                fact_ids.append(fact.pk)
        written += per_subject
        entity = Entity.objects.get(scope=scope, name=subject)
        subjects.append((scope.pk, entity.pk))
        n += 1
    conflict_scope = scopes[0]
    for i in range(220):
        body = {
            "scope": conflict_scope.name,
            "subject": f"versioned-{i}",
            "predicate": "core/has-version",
            "object": "2.0.0",
            "source_type": "code",
            "confidence": 0.95,
        }
        assert_fact(actor=steward, data=body)
        outcome = assert_fact(
            actor=agent, data={**body, "object": "3.0.0", "source_type": "agent-note"}
        )
        assert outcome.status == "flagged", outcome.status
    return Store(
        facts=written + 440,
        scope_ids=[scope.pk for scope in scopes],
        steward_id=steward.pk,
        agent_id=agent.pk,
        agent_token=secret,
        fact_ids=fact_ids,
        subjects=subjects[:200],
        conflict_scope_id=conflict_scope.pk,
        system_fact_ids=fact_ids,
    )


def options_sort() -> str:
    import os

    return os.environ.get("BENCH_PROFILE_SORT", "cumulative")


def profile(store: Store, name: str, count: int) -> None:
    import cProfile
    import pstats

    requests = prepare(store)
    try:
        call = requests.by_name()[name]
        with connections_kept():
            for _ in range(20):
                _checked(name, call())
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(count):
                call()
            profiler.disable()
    finally:
        requests.mcp.close()
    pstats.Stats(profiler).sort_stats(options_sort()).print_stats(45)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=3_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-round", type=int, default=PER_ROUND)
    parser.add_argument("--database", default=DATABASE)
    parser.add_argument("--profile", choices=["POST", *READS])
    parser.add_argument("--profile-count", type=int, default=500)
    options = parser.parse_args()
    start_django(options.database)
    try:
        started = time.perf_counter()
        store = small_store(options.facts)
        print(f"store: {store.facts} facts in {time.perf_counter() - started:.0f} s")
        if options.profile:
            profile(store, options.profile, options.profile_count)
            return
        for figure in measure(store, rounds=options.rounds, per_round=options.per_round):
            verdict = "yes" if figure.passed() else "NO"
            print(f"{figure.measure}: {figure.value} (target {figure.target}: {verdict})")
            print(f"    {figure.detail}")
    finally:
        drop_database(options.database)


if __name__ == "__main__":
    main()
