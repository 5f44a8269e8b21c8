"""Benchmark: the console's server time next to the plain SQL that fetches the same rows.

Not a test. For the conflicts queue, one conflict page, the candidates queue
and one fact page it prints one table, with 1,000 and then 10,000 open
conflicts (``--size`` sets the smaller; the larger is always ten times it):

- queries: how many SQL queries the page makes at each size;
- console p95: the whole request in process (Django's handler with every
  middleware, a signed-in global steward: session, authorization, queries,
  template), the 95th percentile of the timed requests;
- growth: console p95 at 10x the data / console p95 at 1x (target ≤ 1.3);
- vs SQL: console p95 / the p95 of the plain SQL that fetches the same rows,
  hand-written, over one psycopg connection, in the same run (target ≤ 10).

Both sizes and both sides are timed in alternating rounds, so a burst of load
elsewhere on the machine hurts all four alike.

The data is written in bulk (each open conflict: an entity, a standing fact
from ``code``, an incoming one from ``agent-note`` that is disputed, the
conflict and its two members), so every incoming fact and every standing one
is also a candidate: 2,000 and 20,000 candidates.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/any .venv/bin/python bench/console.py
    .venv/bin/python bench/console.py --runs 200 --size 500
    .venv/bin/python bench/console.py --profile "conflict page" --runs 200

Without DATABASE_URL it runs on the embedded PostgreSQL. It creates and drops
its own databases, ``bench_console`` (1x) and ``bench_console_large`` (10x):
with one database per size both sizes are measured in alternating rounds.
"""

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg
from _setup import _recreate as recreate_database
from _setup import drop_database, raw_connection, start_django

DATABASES = ("bench_console", "bench_console_large")
DEFAULT_SIZE = 1_000
GROWTH = 10
PAGE = 25

CONFLICT_QUEUE_SQL = [
    """SELECT id FROM memories_scope""",
    """SELECT count(*) FROM (SELECT 1 FROM memories_conflict
        WHERE resolved_at IS NULL AND scope_id IN (%(scope)s) LIMIT 1001) AS counted""",
    """SELECT c.id, c.kind, c.opened_at, s.name, e.name, p.name
         FROM memories_conflict c
         JOIN memories_scope s ON s.id = c.scope_id
         JOIN memories_entity e ON e.id = c.subject_id
         JOIN memories_predicate p ON p.id = c.predicate_id
        WHERE c.resolved_at IS NULL AND c.scope_id IN (%(scope)s)
        ORDER BY c.opened_at, c.id LIMIT 25""",
    """SELECT m.conflict_id, m.role, f.object_lit, st.name
         FROM memories_conflictmember m
         JOIN memories_fact f ON f.id = m.fact_id
         JOIN memories_sourcetype st ON st.id = f.source_type_id
        WHERE m.conflict_id = ANY(%(page)s)
        ORDER BY m.conflict_id, f.recorded_at, f.id""",
]

CONFLICT_PAGE_SQL = [
    """SELECT c.*, s.name, e.name, p.name, p.exclusion_group FROM memories_conflict c
         JOIN memories_scope s ON s.id = c.scope_id
         JOIN memories_entity e ON e.id = c.subject_id
         JOIN memories_predicate p ON p.id = c.predicate_id
        WHERE c.id = %(conflict)s""",
    """SELECT m.*, f.*, e.name, p.name, st.name, st.trust_rank, u.username
         FROM memories_conflictmember m
         JOIN memories_fact f ON f.id = m.fact_id
         JOIN memories_entity e ON e.id = f.subject_id
         JOIN memories_predicate p ON p.id = f.predicate_id
         JOIN memories_sourcetype st ON st.id = f.source_type_id
         JOIN auth_user u ON u.id = f.author_id
        WHERE m.conflict_id = %(conflict)s ORDER BY f.recorded_at, f.id""",
    """SELECT r.*, u.username FROM admissions_record r JOIN auth_user u ON u.id = r.author_id
        WHERE r.fact_id = ANY(%(members)s) ORDER BY r.inserted_at, r.id""",
    """SELECT f.*, st.name FROM memories_fact f
         JOIN memories_sourcetype st ON st.id = f.source_type_id
        WHERE f.scope_id = %(scope)s AND f.subject_id = %(subject)s
          AND f.predicate_id = %(predicate)s
        ORDER BY f.recorded_at DESC, f.id DESC LIMIT 60""",
    """SELECT id, kind, opened_at, resolution, reason FROM memories_conflict
        WHERE scope_id = %(scope)s AND subject_id = %(subject)s
          AND predicate_id = %(predicate)s AND id <> %(conflict)s
        ORDER BY opened_at DESC LIMIT 20""",
]

CANDIDATES_SQL = [
    """SELECT id FROM memories_scope""",
    """SELECT count(*) FROM (SELECT 1 FROM memories_fact f
        WHERE f.scope_id IN (%(scope)s) AND f.bucket = 'system' AND f.t_invalid IS NULL
          AND NOT EXISTS (SELECT 1 FROM admissions_factverdict v WHERE v.fact_id = f.id)
        LIMIT 1001) AS counted""",
    """SELECT f.*, s.name, e.name, p.name, st.name, st.trust_rank, u.username
         FROM memories_fact f
         JOIN memories_scope s ON s.id = f.scope_id
         JOIN memories_entity e ON e.id = f.subject_id
         JOIN memories_predicate p ON p.id = f.predicate_id
         JOIN memories_sourcetype st ON st.id = f.source_type_id
         JOIN auth_user u ON u.id = f.author_id
        WHERE f.scope_id IN (%(scope)s) AND f.bucket = 'system' AND f.t_invalid IS NULL
          AND NOT EXISTS (SELECT 1 FROM admissions_factverdict v WHERE v.fact_id = f.id)
        ORDER BY f.recorded_at, f.id LIMIT 25""",
]

FACT_PAGE_SQL = [
    """SELECT f.*, s.name, e.name, p.name, st.name, st.trust_rank, u.username
         FROM memories_fact f
         JOIN memories_scope s ON s.id = f.scope_id
         JOIN memories_entity e ON e.id = f.subject_id
         JOIN memories_predicate p ON p.id = f.predicate_id
         JOIN memories_sourcetype st ON st.id = f.source_type_id
         JOIN auth_user u ON u.id = f.author_id
        WHERE f.id = %(fact)s""",
    """SELECT r.*, u.username FROM admissions_record r JOIN auth_user u ON u.id = r.author_id
        WHERE r.fact_id = %(fact)s ORDER BY r.inserted_at, r.id""",
    """SELECT m.role, m.disputes, c.id, c.kind, c.opened_at, c.resolved_at
         FROM memories_conflictmember m JOIN memories_conflict c ON c.id = m.conflict_id
        WHERE m.fact_id = %(fact)s ORDER BY c.opened_at DESC""",
    """SELECT o.id, o.reported_at, u.username FROM memories_outcome o
         JOIN memories_outcome_facts of ON of.outcome_id = o.id
         JOIN auth_user u ON u.id = o.reported_by_id
        WHERE of.fact_id = %(fact)s ORDER BY o.reported_at DESC LIMIT 50""",
    """SELECT id FROM memories_fact WHERE superseded_by_id = %(fact)s
        ORDER BY recorded_at LIMIT 1""",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=100, help="timed requests per page, size and side"
    )
    parser.add_argument(
        "--size",
        type=int,
        default=DEFAULT_SIZE,
        help=f"open conflicts at 1x (default {DEFAULT_SIZE:,}); the large side has {GROWTH}x",
    )
    parser.add_argument(
        "--profile",
        choices=PAGES,
        help="instead of measuring, profile this page at --size open conflicts (cProfile)",
    )
    options = parser.parse_args()
    start_django(DATABASES[0])
    try:
        sizes = (options.size, options.size * GROWTH)
        if options.profile:
            profile(options.profile, options.runs, sizes[0])
        else:
            run(options.runs, sizes)
    finally:
        for database in DATABASES:
            drop_database(database)


def profile(name: str, runs: int, size: int) -> None:
    """Where one page's time goes: cProfile over ``runs`` requests, after a warm-up."""
    import cProfile
    import pstats

    prepare_settings()
    side = Side(DATABASES[0], size)
    console, _ = side.page(name)
    for _ in range(5):
        console()
    profiler = cProfile.Profile()
    profiler.runcall(lambda: [console() for _ in range(runs)])
    stats = pstats.Stats(profiler).strip_dirs()
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(25)


def use(database: str) -> None:
    """Point Django's connection at one of the bench databases."""
    from django.db import connection

    if connection.settings_dict["NAME"] != database:
        connection.close()
        connection.settings_dict["NAME"] = database


def prepare_settings() -> None:
    from django.conf import settings

    # _setup runs Django as production does (DEBUG off); the in-process
    # requests' host must be allowed, and they come in over HTTPS.
    settings.ALLOWED_HOSTS = ["testserver"]
    # No collectstatic here: plain static URLs instead of the manifest's hashed
    # ones (a dictionary lookup either way).
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def run(runs: int, sizes: tuple[int, int]) -> None:
    from django.core.management import call_command

    prepare_settings()

    # One database per size, so both sizes can be measured in alternating
    # rounds: a burst of load from elsewhere on the machine then hurts both.
    sides = {}
    for size, database in zip(sizes, DATABASES, strict=True):
        if database != DATABASES[0]:
            recreate_database(database)
            use(database)
            call_command("migrate", verbosity=0)
        use(database)
        sides[size] = Side(database, size)

    results: dict[str, Figures] = {}
    for name in PAGES:
        times = compare({size: side.page(name) for size, side in sides.items()}, runs)
        # Counted after the timed runs, warm: the process's vocabulary and
        # permission caches are then filled, as they are in a running server.
        queries = {size: side.queries(name) for size, side in sides.items()}
        results[name] = Figures(queries=queries, times=times)
    use(DATABASES[0])
    floor = p95(_timed(lambda: sides[sizes[0]].client.get("/signin/"), runs))
    report(results, sizes, runs)
    print(
        f"for scale: a signed-in request that only loads its session and account and"
        f" redirects (/signin/) takes {floor * 1e3:.2f} ms (p95) here"
    )


PAGES = ("conflicts queue", "conflict page", "candidates queue", "fact page")


class Side:
    """One bench database filled with ``size`` open conflicts, and how to read its pages."""

    def __init__(self, database: str, size: int) -> None:
        from django.contrib.auth.models import Group, User

        from admissions.actions import file_challenge, record_verdict
        from memories.models import Conflict, Scope
        from memories.roles import STEWARDS_GROUP

        self.database = database
        steward = User.objects.create_user("steward")
        steward.groups.add(Group.objects.get(name=STEWARDS_GROUP))
        member = User.objects.create_user("member")
        scope = Scope.objects.create(name="bench")
        scope.members.add(steward, member)
        grow(scope, steward, member, 0, size)
        conflict = Conflict.objects.open().order_by("opened_at", "id").first()
        standing = conflict.members.get(role="existing").fact
        record_verdict(actor=steward, fact_id=standing.pk, verdict="admitted", ground="ok")
        file_challenge(actor=member, fact_id=standing.pk, ground="no", evidence=["ref"])
        self.client = Server(steward)
        self.raw = raw_connection()
        self.raw.autocommit = True
        # Bind parameters client-side, as Django does: the planner then sees
        # the values, so the baseline gets the same plans as the console.
        self.raw.cursor_factory = psycopg.ClientCursor
        self.raw.execute("ANALYZE")
        page_ids = Conflict.objects.open().order_by("opened_at", "id").values_list("pk", flat=True)
        self.params = {
            "page": list(page_ids[:PAGE]),
            "conflict": conflict.pk,
            "members": list(conflict.members.values_list("fact_id", flat=True)),
            "scope": scope.pk,
            "subject": conflict.subject_id,
            "predicate": conflict.predicate_id,
            "fact": standing.pk,
        }
        self.urls = {
            "conflicts queue": ("/conflicts/", CONFLICT_QUEUE_SQL),
            "conflict page": (f"/conflicts/{conflict.pk}/", CONFLICT_PAGE_SQL),
            "candidates queue": ("/candidates/", CANDIDATES_SQL),
            "fact page": (f"/facts/{standing.pk}/", FACT_PAGE_SQL),
        }

    def queries(self, name: str) -> int:
        """How many SQL queries one request for the page makes."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        use(self.database)
        with CaptureQueriesContext(connection) as captured:
            _get(self.client, self.urls[name][0])
        return len(captured)

    def page(self, name: str) -> tuple[Callable[[], None], Callable[[], None]]:
        url, statements = self.urls[name]

        def console() -> None:
            use(self.database)
            _get(self.client, url)

        def plain() -> None:
            _plain(self.raw, statements, self.params)

        return console, plain


class Server:
    """Django's request handling in process, for one signed-in account.

    The test Client would add its own instrumentation (it copies the context
    of every template rendered); a bare handler with the full middleware
    stack measures what a WSGI server would run.
    """

    def __init__(self, user) -> None:
        from django.core.handlers.base import BaseHandler
        from django.test import Client, RequestFactory

        signed_in = Client()
        signed_in.force_login(user)
        cookie = f"sessionid={signed_in.cookies['sessionid'].value}"
        self.requests = RequestFactory(headers={"Cookie": cookie})
        self.handler = BaseHandler()
        self.handler.load_middleware()

    def get(self, url: str):
        return self.handler.get_response(self.requests.get(url, secure=True))


def _get(client: Server, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code, response.get("Location"))


def _plain(raw, statements: list[str], params: dict) -> None:
    for statement in statements:
        raw.execute(statement, params).fetchall()


def compare(sides: dict, runs: int) -> dict[int, tuple[list[float], list[float]]]:
    """Seconds of each request of each side of each size, in alternating rounds after a warm-up.

    Switching databases closes Django's connection; the reconnection is made
    before the clock starts, by an untimed request.
    """
    for console, plain in sides.values():
        for _ in range(3):
            console()
            plain()
    times = {size: ([], []) for size in sides}
    for _ in range(runs):
        for size, (console, plain) in sides.items():
            console()  # reconnects to this size's database, untimed
            for function, into in ((console, times[size][0]), (plain, times[size][1])):
                started = time.perf_counter()
                function()
                into.append(time.perf_counter() - started)
    return times


def p95(values: list[float]) -> float:
    """The 95th percentile (the value below which 95% of the runs fall)."""
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


@dataclass
class Figures:
    """One page's query count per size, and its (console, plain SQL) request times per size."""

    queries: dict[int, int]
    times: dict[int, tuple[list[float], list[float]]]


def _timed(function: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return times


def report(results: dict[str, Figures], sizes: tuple[int, int], runs: int) -> None:
    small, large = sizes
    header = (
        f"{'page':<17} {'queries':>9} {'p95 ms 1x':>10} {'p95 ms 10x':>11} {'growth':>7}"
        f" {'SQL ms 1x':>10} {'SQL ms 10x':>11} {'vs SQL 1x':>10} {'vs SQL 10x':>11}"
    )
    print(f"open conflicts: {small:,} (1x) and {large:,} (10x); {runs} timed requests each")
    print(header)
    print("-" * len(header))
    for name, figures in results.items():
        console = {size: p95(figures.times[size][0]) for size in sizes}
        plain = {size: p95(figures.times[size][1]) for size in sizes}
        counts = figures.queries[small], figures.queries[large]
        queries = str(counts[0]) if counts[0] == counts[1] else f"{counts[0]}/{counts[1]}"
        print(
            f"{name:<17} {queries:>9} {console[small] * 1e3:>10.2f} {console[large] * 1e3:>11.2f}"
            f" {console[large] / console[small]:>7.2f}"
            f" {plain[small] * 1e3:>10.2f} {plain[large] * 1e3:>11.2f}"
            f" {console[small] / plain[small]:>10.2f} {console[large] / plain[large]:>11.2f}"
        )
    print()
    print("targets: growth (p95 at 10x / p95 at 1x) <= 1.3; vs SQL (console p95 / SQL p95) <= 10")
    print()
    # A p95 follows the machine's load as much as the page; the medians say
    # whether a bad p95 is the page's or the load's.
    print(f"medians, ms: {'page':<17} {'1x':>7} {'10x':>7} {'SQL 1x':>7} {'SQL 10x':>8}")
    for name, figures in results.items():
        middle = [statistics.median(figures.times[size][side]) for side in (0, 1) for size in sizes]
        print(
            f"{'':<13}{name:<17} {middle[0] * 1e3:>7.2f} {middle[1] * 1e3:>7.2f}"
            f" {middle[2] * 1e3:>7.2f} {middle[3] * 1e3:>8.2f}"
        )


def grow(scope, steward, member, start: int, stop: int) -> None:
    """Bulk-write open conflicts ``start`` .. ``stop`` (outranked: code vs agent-note)."""
    from django.db import transaction

    from memories.models import (
        Conflict,
        ConflictMember,
        Entity,
        Fact,
        MemberRole,
        Predicate,
        SourceType,
    )

    version = Predicate.objects.get(name="core/has-version")
    code = SourceType.objects.get(name="code")
    note = SourceType.objects.get(name="agent-note")
    origin = datetime(2026, 1, 1, tzinfo=UTC)
    with transaction.atomic():
        entities = Entity.objects.bulk_create(
            Entity(scope=scope, name=f"service-{i:05}", key=f"service-{i:05}")
            for i in range(start, stop)
        )
        facts, conflicts, members = [], [], []
        for i, entity in zip(range(start, stop), entities, strict=True):
            at = origin + timedelta(minutes=i)
            standing = _fact(scope, entity, version, code, steward, "1.0", 0.95, at)
            incoming = _fact(scope, entity, version, note, member, "2.0", 0.65, at)
            incoming.recorded_at = incoming.last_reinforced_at = at + timedelta(seconds=30)
            conflict = Conflict(
                id=uuid.uuid4(),
                scope=scope,
                kind="outranked",
                subject=entity,
                predicate=version,
                opened_at=incoming.recorded_at,
            )
            facts += [standing, incoming]
            conflicts.append(conflict)
            members += [
                ConflictMember(
                    conflict=conflict, fact=incoming, role=MemberRole.INCOMING, disputes=True
                ),
                ConflictMember(
                    conflict=conflict, fact=standing, role=MemberRole.EXISTING, disputes=False
                ),
            ]
        Fact.objects.bulk_create(facts, batch_size=2_000)
        Conflict.objects.bulk_create(conflicts, batch_size=2_000)
        ConflictMember.objects.bulk_create(members, batch_size=2_000)


def _fact(scope, entity, predicate, source, author, value, confidence, at):
    from memories.models import Fact

    return Fact(
        id=uuid.uuid4(),
        scope=scope,
        subject=entity,
        predicate=predicate,
        object_kind="literal",
        object_lit=value,
        object_key=value,
        epistemic="observation",
        source_type=source,
        confidence=confidence,
        author=author,
        bucket="system",
        t_valid=at,
        recorded_at=at,
        last_reinforced_at=at,
    )


if __name__ == "__main__":
    main()
