"""Benchmark: every console page a steward uses, next to the plain SQL that fetches its rows.

Not a test. For each page (``PAGES``) it measures:

- queries: how many SQL queries one request for the page makes (target: at
  most 12, and the same at every store size);
- console p95: the whole request in process (Django's handler with every
  middleware, a signed-in global steward: session, authorization, queries,
  template), the 95th percentile of the timed requests;
- vs SQL: console p95 / the p95 of the plain SQL that fetches the same rows,
  hand-written, over one psycopg connection, in the same rounds (target <= 10).

And one fact's admission status (``admissions.selectors.fact_status``, without
its explanation, as ``bench/admissions.py`` measures it) against a
primary-key SELECT of the fact (target <= 10).

Pages that read one item (a conflict, a fact, a subject) go through the
store's samples request by request, and the plain SQL reads the same item in
the same turn. The two sides alternate request by request, so a burst of load
elsewhere on the machine hurts both alike.

The exports (``/audit/export.csv``, ``.jsonl``) are downloads of the whole
feed, not pages, and are left out; so are the pages that only answer a POST.

``measure(store, rounds=3)`` is what ``bench/scale.py`` calls on a store made by
``bench/generate.py``. Run as a script, it measures stores of ``--sizes`` facts
made by ``bench/generate.py``, or, without ``--sizes``, stores it grows itself
(open conflicts in one scope, facts with verdicts and challenges in four more,
audit entries) at ``--size`` and ten times it; the sizes one after the other:

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/any .venv/bin/python bench/pages.py
    .venv/bin/python bench/pages.py --sizes 20000,200000 --database cgb_console
    .venv/bin/python bench/pages.py --size 500 --rounds 5
    .venv/bin/python bench/pages.py --profile "conflict page" --rounds 5
    .venv/bin/python bench/pages.py --queries     # each page's SQL

(``pages``, not ``console``: the harness imports it by name from ``bench/``,
where ``console`` would shadow the console app.)

Without DATABASE_URL it runs on the embedded PostgreSQL. It creates and drops
its own database (``--database``, default ``bench_console``).
"""

import argparse
import random
import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import psycopg
from _figures import Figure, Store, p95
from _setup import create_database, drop_database, raw_connection, start_django

DATABASE = "bench_console"
DEFAULT_SIZE = 1_000
GROWTH = 10
# Requests per page, side and round.
PER_ROUND = 20
QUERY_TARGET = 12
# A page's query count is the most any of its first samples needs (a system
# fact's page reads its status, a user fact's does not).
COUNTED_SAMPLES = 20
RATIO_TARGET = 10

# --- the plain SQL of each page -------------------------------------------------------
#
# Each page's baseline fetches the rows the page shows, as a hand-written
# client would: the same filters, order and page size, the names it prints
# joined in, nothing rendered. Parameters come from ``Page.params``.

CONFLICT_QUEUE_SQL = [
    """SELECT id FROM memories_scope""",
    """SELECT count(*) FROM (SELECT 1 FROM memories_conflict
        WHERE resolved_at IS NULL AND scope_id = ANY(%(scopes)s) LIMIT 1026) AS counted""",
    """SELECT c.id, c.kind, c.opened_at, s.name, e.name, p.name
         FROM memories_conflict c
         JOIN memories_scope s ON s.id = c.scope_id
         JOIN memories_entity e ON e.id = c.subject_id
         JOIN memories_predicate p ON p.id = c.predicate_id
        WHERE c.resolved_at IS NULL AND c.scope_id = ANY(%(scopes)s)
        ORDER BY c.opened_at, c.id LIMIT 25""",
    """SELECT m.conflict_id, m.role, f.object_lit, st.name
         FROM memories_conflictmember m
         JOIN memories_fact f ON f.id = m.fact_id
         JOIN memories_sourcetype st ON st.id = f.source_type_id
        WHERE m.conflict_id IN (SELECT c.id FROM memories_conflict c
                WHERE c.resolved_at IS NULL AND c.scope_id = ANY(%(scopes)s)
                ORDER BY c.opened_at, c.id LIMIT 25)
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
        WHERE r.fact_id IN (SELECT fact_id FROM memories_conflictmember
                             WHERE conflict_id = %(conflict)s)
        ORDER BY r.inserted_at, r.id""",
    """SELECT f.*, st.name FROM memories_fact f
         JOIN memories_sourcetype st ON st.id = f.source_type_id
         JOIN memories_conflict c ON c.id = %(conflict)s
        WHERE f.scope_id = c.scope_id AND f.subject_id = c.subject_id
          AND f.predicate_id = c.predicate_id
        ORDER BY f.recorded_at DESC, f.id DESC LIMIT 60""",
    """SELECT o.id, o.kind, o.opened_at, o.resolution, o.reason FROM memories_conflict o
         JOIN memories_conflict c ON c.id = %(conflict)s
        WHERE o.scope_id = c.scope_id AND o.subject_id = c.subject_id
          AND o.predicate_id = c.predicate_id AND o.id <> c.id
        ORDER BY o.opened_at DESC LIMIT 20""",
]

CANDIDATES_SQL = [
    """SELECT id, name FROM memories_scope ORDER BY name""",
    """SELECT count(*) FROM (SELECT 1 FROM memories_fact f
        WHERE f.scope_id = ANY(%(scopes)s) AND f.bucket = 'system' AND f.t_invalid IS NULL
          AND NOT EXISTS (SELECT 1 FROM admissions_factverdict v WHERE v.fact_id = f.id)
        LIMIT 1026) AS counted""",
    """SELECT f.*, s.name, e.name, p.name, st.name, st.trust_rank, u.username
         FROM memories_fact f
         JOIN memories_scope s ON s.id = f.scope_id
         JOIN memories_entity e ON e.id = f.subject_id
         JOIN memories_predicate p ON p.id = f.predicate_id
         JOIN memories_sourcetype st ON st.id = f.source_type_id
         JOIN auth_user u ON u.id = f.author_id
        WHERE f.scope_id = ANY(%(scopes)s) AND f.bucket = 'system' AND f.t_invalid IS NULL
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
    # The fact's slot (its predicate or exclusion group, its bucket): the timeline and history.
    """SELECT o.*, p.name, st.name, u.username FROM memories_fact o
         JOIN memories_fact f ON f.id = %(fact)s
         JOIN memories_predicate p ON p.id = o.predicate_id
         JOIN memories_sourcetype st ON st.id = o.source_type_id
         JOIN auth_user u ON u.id = o.author_id
        WHERE o.scope_id = f.scope_id AND o.subject_id = f.subject_id AND o.bucket = f.bucket
          AND o.predicate_id IN (SELECT q.id FROM memories_predicate q
                                  JOIN memories_predicate fp ON fp.id = f.predicate_id
                                 WHERE q.id = fp.id OR (fp.exclusion_group <> ''
                                       AND q.exclusion_group = fp.exclusion_group))
        ORDER BY o.recorded_at DESC, o.id DESC LIMIT 60""",
]


# The viewer's own latest actions, with the conflict an entry names.
_RECENT_SQL = """SELECT a.*, s.name,
        (SELECT e.name || ' ' || p.name FROM memories_conflict c
           JOIN memories_entity e ON e.id = c.subject_id
           JOIN memories_predicate p ON p.id = c.predicate_id
          WHERE a.target_type = 'conflict' AND c.id = a.target_id::uuid)
     FROM memories_auditentry a JOIN memories_scope s ON s.id = a.scope_id
    WHERE a.actor_id = %(steward)s ORDER BY a.at DESC, a.id DESC LIMIT 10"""

DASHBOARD_SQL = [
    """SELECT count(*) FROM (SELECT 1 FROM memories_conflict
        WHERE resolved_at IS NULL AND scope_id = ANY(%(scopes)s) LIMIT 1001) AS counted""",
    """SELECT opened_at FROM memories_conflict
        WHERE resolved_at IS NULL AND scope_id = ANY(%(scopes)s) ORDER BY opened_at LIMIT 1""",
    """SELECT count(*) FROM (SELECT 1 FROM memories_fact f
        WHERE f.scope_id = ANY(%(scopes)s) AND f.bucket = 'system' AND f.t_invalid IS NULL
          AND NOT EXISTS (SELECT 1 FROM admissions_factverdict v WHERE v.fact_id = f.id)
        LIMIT 1001) AS counted""",
    """SELECT f.recorded_at FROM memories_fact f
        WHERE f.scope_id = ANY(%(scopes)s) AND f.bucket = 'system' AND f.t_invalid IS NULL
          AND NOT EXISTS (SELECT 1 FROM admissions_factverdict v WHERE v.fact_id = f.id)
        ORDER BY f.recorded_at LIMIT 1""",
    """SELECT count(*), min(r.inserted_at) FROM (SELECT r.inserted_at FROM admissions_record r
        WHERE r.role = 'challenge' AND r.scope_id = ANY(%(scopes)s)
          AND NOT EXISTS (SELECT 1 FROM admissions_record x
                           WHERE x.role = 'refutation' AND x.challenge_id = r.id)
        LIMIT 1001) AS r""",
    """SELECT count(DISTINCT k.fact_id), min(k.inserted_at) FROM admissions_challenge_rank k
        WHERE k.scope_id = ANY(%(scopes)s) AND k.position * 100 <= k.admitted * 25 + 99""",
    _RECENT_SQL,
    """SELECT id, name FROM memories_scope ORDER BY name""",
]

CHALLENGES_SQL = [
    """SELECT id, name FROM memories_scope ORDER BY name""",
    """SELECT count(*) FROM (SELECT 1 FROM admissions_record r
        WHERE r.role = 'challenge' AND r.scope_id = ANY(%(scopes)s)
          AND NOT EXISTS (SELECT 1 FROM admissions_record x
                           WHERE x.role = 'refutation' AND x.challenge_id = r.id)
        LIMIT 1026) AS counted""",
    """SELECT r.*, s.name, u.username, e.name, p.name, f.object_lit FROM admissions_record r
         JOIN memories_scope s ON s.id = r.scope_id
         JOIN auth_user u ON u.id = r.author_id
         JOIN memories_fact f ON f.id = r.fact_id
         JOIN memories_entity e ON e.id = f.subject_id
         JOIN memories_predicate p ON p.id = f.predicate_id
        WHERE r.role = 'challenge' AND r.scope_id = ANY(%(scopes)s)
          AND NOT EXISTS (SELECT 1 FROM admissions_record x
                           WHERE x.role = 'refutation' AND x.challenge_id = r.id)
        ORDER BY r.inserted_at, r.id LIMIT 25""",
    # The flood cap of each account on the page, for the page's scopes at once.
    """SELECT o.scope_id, o.author_id, u.username, count(*),
              count(DISTINCT o.fact_id) FILTER (WHERE NOT o.fact_admitted), t.admitted
         FROM admissions_openchallenge o
         JOIN auth_user u ON u.id = o.author_id
         LEFT JOIN admissions_scopetally t ON t.scope_id = o.scope_id
        WHERE o.evidenced AND o.scope_id IN (SELECT r.scope_id FROM admissions_record r
                              WHERE r.role = 'challenge' AND r.scope_id = ANY(%(scopes)s)
                              ORDER BY r.inserted_at, r.id LIMIT 25)
        GROUP BY o.scope_id, o.author_id, u.username, t.admitted""",
    """SELECT scope_id, author_id, challenge_id FROM admissions_challenge_rank
        WHERE scope_id IN (SELECT r.scope_id FROM admissions_record r
                            WHERE r.role = 'challenge' AND r.scope_id = ANY(%(scopes)s)
                            ORDER BY r.inserted_at, r.id LIMIT 25)
        ORDER BY scope_id, author_id, position""",
]

# A page of facts as the Facts browser lists them (newest first), each with its
# admission status; ``{where}`` narrows them. The page's ids are found first
# and only its rows are joined, as the console's paginator does.
_FACT_ROWS_SQL = """SELECT f.*, s.name, e.name, p.name, st.name, u.username,
        CASE WHEN f.bucket = 'user' THEN NULL
             WHEN f.id IN (SELECT k.fact_id FROM admissions_challenge_rank k
                            WHERE k.position * 100 <= k.admitted * 25 + 99) THEN 'suspended'
             ELSE coalesce((SELECT v.verdict FROM admissions_factverdict v
                             WHERE v.fact_id = f.id), 'candidate') END
     FROM (SELECT f.id FROM memories_fact f
            WHERE {where} ORDER BY f.recorded_at DESC, f.id DESC LIMIT 25) AS page
     JOIN memories_fact f ON f.id = page.id
     JOIN memories_scope s ON s.id = f.scope_id
     JOIN memories_entity e ON e.id = f.subject_id
     JOIN memories_predicate p ON p.id = f.predicate_id
     JOIN memories_sourcetype st ON st.id = f.source_type_id
     JOIN auth_user u ON u.id = f.author_id
    ORDER BY f.recorded_at DESC, f.id DESC"""

_SUSPENDED = """f.id IN (SELECT k.fact_id FROM admissions_challenge_rank k
                  WHERE k.position * 100 <= k.admitted * 25 + 99)"""

SUSPENDED_SQL = [
    """SELECT id, name FROM memories_scope ORDER BY name""",
    f"""SELECT count(*) FROM (SELECT 1 FROM memories_fact f WHERE {_SUSPENDED}
        LIMIT 1026) AS counted""",
    _FACT_ROWS_SQL.format(where=_SUSPENDED),
]

FACTS_SQL = [
    """SELECT id, name FROM memories_scope ORDER BY name""",
    """SELECT count(*) FROM (SELECT 1 FROM memories_fact LIMIT 1026) AS counted""",
    _FACT_ROWS_SQL.format(where="true"),
]

SUBJECT_SQL = [
    """SELECT e.*, s.name FROM memories_entity e JOIN memories_scope s ON s.id = e.scope_id
        WHERE e.id = %(entity)s""",
    # Its current truth: the live facts valid now, user facts and admitted system ones.
    """SELECT f.*, p.name, st.name, st.trust_rank FROM memories_fact f
         JOIN memories_entity e ON e.id = %(entity)s
         JOIN memories_predicate p ON p.id = f.predicate_id
         JOIN memories_sourcetype st ON st.id = f.source_type_id
        WHERE f.scope_id = e.scope_id AND f.subject_id = e.id AND f.t_invalid IS NULL
          AND f.t_valid <= now()
          AND (f.bucket = 'user' OR EXISTS (SELECT 1 FROM admissions_factverdict v
                                             WHERE v.fact_id = f.id AND v.verdict = 'admitted'))
          AND NOT EXISTS (SELECT 1 FROM memories_conflictmember m
                            JOIN memories_conflict c ON c.id = m.conflict_id
                           WHERE m.fact_id = f.id AND m.disputes AND c.resolved_at IS NULL)
        ORDER BY f.confidence DESC""",
    # What waits: live facts disputed or not admitted.
    """SELECT f.*, p.name, st.name FROM memories_fact f
         JOIN memories_entity e ON e.id = %(entity)s
         JOIN memories_predicate p ON p.id = f.predicate_id
         JOIN memories_sourcetype st ON st.id = f.source_type_id
        WHERE f.scope_id = e.scope_id AND f.subject_id = e.id AND f.t_invalid IS NULL
          AND f.bucket = 'system' AND NOT EXISTS (SELECT 1 FROM admissions_factverdict v
                                             WHERE v.fact_id = f.id AND v.verdict = 'admitted')
        ORDER BY p.name, f.recorded_at LIMIT 100""",
    """SELECT t.*, p.name FROM memories_truthslot t
         JOIN memories_predicate p ON p.id = t.predicate_id
        WHERE t.subject_id = %(entity)s ORDER BY p.name""",
    # Every slot's newest versions, for the small multiples.
    """SELECT * FROM (SELECT f.*, p.name, st.name, u.username,
              row_number() OVER (PARTITION BY coalesce(nullif(p.exclusion_group, ''), p.name),
                                 f.bucket, CASE WHEN f.bucket = 'user' THEN f.author_id END
                                 ORDER BY f.recorded_at DESC, f.id DESC) AS newness
         FROM memories_fact f
         JOIN memories_entity e ON e.id = %(entity)s
         JOIN memories_predicate p ON p.id = f.predicate_id
         JOIN memories_sourcetype st ON st.id = f.source_type_id
         JOIN auth_user u ON u.id = f.author_id
        WHERE f.scope_id = e.scope_id AND f.subject_id = e.id) AS versions
        WHERE newness <= 12""",
    """SELECT * FROM memories_entitymerge WHERE entity_id = %(entity)s OR into_id = %(entity)s""",
]

# A page of audit entries, newest first, with actor, scope and conflict names.
_AUDIT_ROWS_SQL = """SELECT a.*, s.name, u.username,
        (SELECT e.name || ' ' || p.name FROM memories_conflict c
           JOIN memories_entity e ON e.id = c.subject_id
           JOIN memories_predicate p ON p.id = c.predicate_id
          WHERE a.target_type = 'conflict' AND c.id = a.target_id::uuid)
     FROM memories_auditentry a
     JOIN memories_scope s ON s.id = a.scope_id
     LEFT JOIN auth_user u ON u.id = a.actor_id
    WHERE {where} ORDER BY a.at DESC, a.id DESC LIMIT 25"""

# The facts the page's entries name (the entries name them by id).
_AUDIT_FACTS_SQL = """SELECT f.id, e.name, p.name, f.object_lit FROM memories_fact f
     JOIN memories_entity e ON e.id = f.subject_id
     JOIN memories_predicate p ON p.id = f.predicate_id
    WHERE f.id IN (SELECT a.target_id::uuid FROM memories_auditentry a
                    WHERE a.target_type = 'fact' AND {where}
                    ORDER BY a.at DESC, a.id DESC LIMIT 25)"""

AUDIT_SQL = [
    """SELECT id, name FROM memories_scope ORDER BY name""",
    """SELECT count(*) FROM (SELECT 1 FROM memories_auditentry LIMIT 1026) AS counted""",
    _AUDIT_ROWS_SQL.format(where="true"),
    _AUDIT_FACTS_SQL.format(where="true"),
]

CHANGES_SQL = [
    """SELECT id, name FROM memories_scope ORDER BY name""",
    """SELECT count(*) FROM (SELECT 1 FROM memories_auditentry WHERE rule <> ''
        LIMIT 1026) AS counted""",
    _AUDIT_ROWS_SQL.format(where="a.rule <> ''"),
    _AUDIT_FACTS_SQL.format(where="a.rule <> ''"),
    """SELECT * FROM memories_auditentry WHERE action = 'reverted' AND target_type = 'audit'
        AND target_id IN (SELECT id::text FROM memories_auditentry WHERE rule <> ''
                           ORDER BY at DESC, id DESC LIMIT 25)""",
]

ENTITIES_SQL = [
    """SELECT id, name FROM memories_scope ORDER BY name""",
    """SELECT count(*) FROM (SELECT 1 FROM memories_entity LIMIT 1026) AS counted""",
    """SELECT e.*, s.name FROM memories_entity e JOIN memories_scope s ON s.id = e.scope_id
        ORDER BY s.name, e.key, e.id LIMIT 25""",
    """SELECT m.*, e.name, i.name FROM memories_entitymerge m
         JOIN memories_entity e ON e.id = m.entity_id
         JOIN memories_entity i ON i.id = m.into_id
        ORDER BY m.at DESC, m.id DESC LIMIT 20""",
]

HEALTH_SQL = [
    """SELECT * FROM memories_workerheartbeat ORDER BY beat_at DESC LIMIT 20""",
    """SELECT count(*), min(enqueued_at) FROM django_tasks_database_dbtaskresult
        WHERE status = 'READY'""",
    """SELECT count(*) FROM django_tasks_database_dbtaskresult WHERE status = 'FAILED'""",
    """SELECT * FROM django_tasks_database_dbtaskresult WHERE status = 'FAILED'
        ORDER BY finished_at DESC LIMIT 5""",
    """SELECT * FROM memories_crawlerrun ORDER BY started_at DESC, id DESC LIMIT 1""",
]

WITHDRAWALS_SQL = ["""SELECT id, name FROM memories_scope ORDER BY name"""]

ACCOUNT_SQL = [
    """SELECT * FROM accounts_apitoken WHERE user_id = %(steward)s
        ORDER BY created_at DESC, id DESC"""
]


@dataclass
class Page:
    """One console page: its URL for each turn, and its plain SQL with that turn's parameters."""

    name: str
    urls: list[str]
    statements: list[str]
    params: list[dict] = field(default_factory=lambda: [{}])

    def turn(self, n: int) -> tuple[str, dict]:
        return self.urls[n % len(self.urls)], self.params[n % len(self.params)]


def pages(store: Store, raw) -> list[Page]:
    """Every page a steward reads, pointed at the store's samples."""
    scopes = {"scopes": list(store.scope_ids), "steward": store.steward_id}
    conflicts = [
        row[0]
        for row in raw.execute(
            """SELECT id FROM memories_conflict WHERE scope_id = %s AND resolved_at IS NULL
                ORDER BY opened_at, id LIMIT 50""",
            [store.conflict_scope_id],
        )
    ]
    facts = [str(pk) for pk in store.fact_ids[:200]]
    subjects = [entity for _, entity in store.subjects[:100]]
    return [
        Page("dashboard", ["/"], DASHBOARD_SQL, [scopes]),
        Page("conflicts queue", ["/conflicts/"], CONFLICT_QUEUE_SQL, [scopes]),
        Page(
            "conflict page",
            [f"/conflicts/{pk}/" for pk in conflicts],
            CONFLICT_PAGE_SQL,
            [{"conflict": pk} for pk in conflicts],
        ),
        Page("candidates queue", ["/candidates/"], CANDIDATES_SQL, [scopes]),
        Page("challenges", ["/challenges/"], CHALLENGES_SQL, [scopes]),
        Page("suspended facts", ["/facts/?status=suspended"], SUSPENDED_SQL),
        Page("facts browser", ["/facts/"], FACTS_SQL),
        Page(
            "fact page",
            [f"/facts/{pk}/" for pk in facts],
            FACT_PAGE_SQL,
            [{"fact": pk} for pk in facts],
        ),
        Page(
            "subject page",
            [f"/subjects/{pk}/" for pk in subjects],
            SUBJECT_SQL,
            [{"entity": pk} for pk in subjects],
        ),
        Page("audit feed", ["/audit/"], AUDIT_SQL),
        Page("automatic changes", ["/changes/"], CHANGES_SQL),
        Page("entities", ["/entities/"], ENTITIES_SQL),
        Page("health", ["/health/"], HEALTH_SQL),
        Page("withdrawals", ["/withdrawals/"], WITHDRAWALS_SQL),
        Page("account", ["/account/"], ACCOUNT_SQL, [scopes]),
    ]


PAGE_NAMES = (
    "dashboard",
    "conflicts queue",
    "conflict page",
    "candidates queue",
    "challenges",
    "suspended facts",
    "facts browser",
    "fact page",
    "subject page",
    "audit feed",
    "automatic changes",
    "entities",
    "health",
    "withdrawals",
    "account",
)


# --- measuring ------------------------------------------------------------------------


def prepare_settings() -> None:
    from django.conf import settings

    # _setup runs Django as production does (DEBUG off); the in-process
    # requests' host must be allowed, and they come in over HTTPS.
    if "testserver" not in settings.ALLOWED_HOSTS:
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    # No collectstatic here: plain static URLs instead of the manifest's hashed
    # ones (a dictionary lookup either way).
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


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
        self.session = signed_in.cookies["sessionid"].value
        self.requests = RequestFactory(headers={"Cookie": cookie})
        self.handler = BaseHandler()
        self.handler.load_middleware()

    def get(self, url: str) -> None:
        response = self.handler.get_response(self.requests.get(url, secure=True))
        assert response.status_code == 200, (url, response.status_code, response.get("Location"))


# What every signed-in request reads before its page: its session and its account.
# The console reads them too, so the baseline pays for them alike.
SIGNED_IN_SQL = [
    """SELECT session_data FROM django_session
        WHERE session_key = %(session)s AND expire_date > now()""",
    """SELECT * FROM auth_user WHERE id = %(steward)s""",
]


def _plain(raw, statements: Sequence[str], params: dict) -> None:
    for statement in (*SIGNED_IN_SQL, *statements):
        raw.execute(statement, params).fetchall()


@dataclass
class Timing:
    """One page's request times (console, plain SQL) and its query count."""

    queries: int
    console: list[float] = field(default_factory=list)
    plain: list[float] = field(default_factory=list)


def count_queries(server: Server, url: str) -> int:
    """How many queries a request for ``url`` makes: the fewer of two requests, so that
    the vocabulary's cache expiring in one of them (two reads) does not count."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for _ in range(2):
        with CaptureQueriesContext(connection) as captured:
            server.get(url)
        counts.append(len(captured))
    return min(counts)


def time_pages(store: Store, rounds: int, per_round: int = PER_ROUND) -> dict[str, Timing]:
    """Each page's request times, both sides alternating request by request, round by round."""
    from django.contrib.auth.models import User

    prepare_settings()
    server = Server(User.objects.get(pk=store.steward_id))
    raw = raw_connection()
    raw.autocommit = True
    # Bind parameters client-side, as Django does: the planner then sees
    # the values, so the baseline gets the same plans as the console.
    raw.cursor_factory = psycopg.ClientCursor
    listed = pages(store, raw)
    signed_in = {"session": server.session, "steward": store.steward_id}
    for page in listed:
        page.params = [{**signed_in, **params} for params in page.params]
    timings = {}
    for page in listed:
        # Warm, as a running server is: the vocabulary and permission caches filled.
        for n in range(3):
            url, params = page.turn(n)
            server.get(url)
            _plain(raw, page.statements, params)
        # The most any of the first samples needs (a user fact's page reads no status).
        urls = {page.turn(n)[0] for n in range(COUNTED_SAMPLES)}
        timings[page.name] = Timing(queries=max(count_queries(server, url) for url in urls))
    turn = 0
    for _ in range(rounds):
        for page in listed:
            timing = timings[page.name]
            for _ in range(per_round):
                url, params = page.turn(turn)
                turn += 1
                started = time.perf_counter()
                server.get(url)
                middle = time.perf_counter()
                _plain(raw, page.statements, params)
                ended = time.perf_counter()
                timing.console.append(middle - started)
                timing.plain.append(ended - middle)
    raw.close()
    return timings


def time_status(store: Store, rounds: int, per_round: int = 200) -> tuple[list[float], list[float]]:
    """One system fact's status without its explanation, and a primary-key SELECT of it."""
    from admissions.selectors import fact_status
    from memories.store.models import Fact

    raw = raw_connection()
    raw.autocommit = True
    facts = list(Fact.objects.filter(pk__in=store.system_fact_ids[:per_round]))
    random.Random(14).shuffle(facts)
    for fact in facts[:20]:
        fact_status(fact, explain=False)
        raw.execute("SELECT * FROM memories_fact WHERE id = %s", [fact.pk]).fetchone()
    ours, baseline = [], []
    for _ in range(rounds):
        for fact in facts:
            started = time.perf_counter()
            fact_status(fact, explain=False)
            middle = time.perf_counter()
            raw.execute("SELECT * FROM memories_fact WHERE id = %s", [fact.pk]).fetchone()
            ended = time.perf_counter()
            ours.append(middle - started)
            baseline.append(ended - middle)
    raw.close()
    return ours, baseline


def measure(store: Store, *, rounds: int = 3) -> list[Figure]:
    """The console's figures (issue #14): per page its ratio to plain SQL and its query count;
    one fact's admission status against a primary-key SELECT."""
    figures = []
    for name, timing in time_pages(store, rounds).items():
        console, plain = p95(timing.console) * 1e3, p95(timing.plain) * 1e3
        ratio = console / plain if timing.plain and plain else float("inf")
        middle = statistics.median(timing.console) * 1e3, statistics.median(timing.plain) * 1e3
        detail = (
            f"p95 {console:.2f} ms vs {plain:.2f} ms (medians {middle[0]:.2f} vs"
            f" {middle[1]:.2f}); queries={timing.queries}"
        )
        figures.append(
            Figure(
                f"console {name} / its plain SQL",
                round(ratio, 2),
                f"<= {RATIO_TARGET}",
                detail,
                p95_ms={name: console},
                queries=timing.queries,
            )
        )
        figures.append(
            Figure(
                f"console {name}: queries",
                timing.queries,
                f"<= {QUERY_TARGET}",
                f"queries={timing.queries}",
                queries=timing.queries,
            )
        )
    ours, baseline = time_status(store, rounds)
    status, select = p95(ours) * 1e3, p95(baseline) * 1e3
    figures.append(
        Figure(
            "one fact's admission status / a primary-key SELECT",
            round(status / select, 2),
            f"<= {RATIO_TARGET}",
            f"p95 {status:.3f} ms vs {select:.3f} ms (fact_status, explain=False)",
            p95_ms={"status": status},
        )
    )
    return figures


# --- standalone: a store of its own -----------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of timed requests")
    parser.add_argument(
        "--sizes",
        default="",
        help="facts of each store made by bench/generate.py, comma-separated, smallest first"
        " (instead of the bench's own stores)",
    )
    parser.add_argument(
        "--size",
        type=int,
        default=DEFAULT_SIZE,
        help=f"open conflicts of the bench's own small store (default {DEFAULT_SIZE:,});"
        f" the large store has {GROWTH}x",
    )
    parser.add_argument("--database", default=DATABASE, help="the bench's own database")
    parser.add_argument(
        "--profile",
        choices=PAGE_NAMES,
        help="instead of measuring, profile this page at --size (cProfile)",
    )
    parser.add_argument(
        "--queries", action="store_true", help="print each page's SQL at --size, then stop"
    )
    options = parser.parse_args()
    start_django(options.database)
    from django.db import connection

    # After Django has loaded the apps: generate puts bench/ first on the path,
    # where bench/admissions.py would stand in for the admissions app.
    from generate import generate

    try:
        if options.profile or options.queries:
            store = build_store(options.size)
            if options.profile:
                profile(store, options.profile, options.rounds * PER_ROUND)
            else:
                show_queries(store)
            return
        sizes = [int(size) for size in options.sizes.split(",") if size]
        results = []
        for n, size in enumerate(sizes or (options.size, options.size * GROWTH)):
            if n:
                # A fresh database for each store (start_django made the first).
                connection.close()
                create_database(options.database)
            store = generate(size) if sizes else build_store(size)
            results.append(measure(store, rounds=options.rounds))
            report(store, results[-1])
        small, large = results[0], results[-1]
        print("growth (p95 at the large store / at the small one; target <= 1.3):")
        for one, other in zip(small, large, strict=True):
            for key, value in one.p95_ms.items():
                print(f"  {key:<20} {other.p95_ms[key] / value:6.2f}")
    finally:
        drop_database(options.database)


def report(store: Store, figures: list[Figure]) -> None:
    print(f"store: {store.facts:,} facts")
    for figure in figures:
        mark = "ok" if figure.passed() else "MISSED"
        print(
            f"  {figure.measure:<58} {figure.value:>8} {figure.target:<6} {mark:<6} {figure.detail}"
        )
    print()


def show_queries(store: Store) -> None:
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    prepare_settings()
    server = Server(User.objects.get(pk=store.steward_id))
    raw = raw_connection()
    for page in pages(store, raw):
        server.get(page.turn(0)[0])
        with CaptureQueriesContext(connection) as captured:
            server.get(page.turn(0)[0])
        print(f"=== {page.name} {page.turn(0)[0]}: {len(captured)} queries")
        for query in captured:
            print(f"  [{query['time']}] {query['sql']}")


def profile(store: Store, name: str, runs: int) -> None:
    """Where one page's time goes: cProfile over ``runs`` requests, after a warm-up."""
    import cProfile
    import pstats

    from django.contrib.auth.models import User

    prepare_settings()
    server = Server(User.objects.get(pk=store.steward_id))
    raw = raw_connection()
    page = next(page for page in pages(store, raw) if page.name == name)
    for n in range(5):
        server.get(page.turn(n)[0])
    profiler = cProfile.Profile()
    profiler.runcall(lambda: [server.get(page.turn(n)[0]) for n in range(runs)])
    stats = pstats.Stats(profiler).strip_dirs()
    stats.sort_stats("cumulative").print_stats(45)
    stats.sort_stats("tottime").print_stats(25)


OTHER_SCOPES = 4


def build_store(size: int) -> Store:
    """A store for the console: ``size`` open conflicts in one scope; in four more,
    ``size`` facts each (ten values a subject), a quarter admitted, some challenged
    and suspended, some of an episode; ``size`` audit entries, half automatic."""
    from django.contrib.auth.models import Group, User
    from django.db import connection

    from admissions.actions import file_challenge, record_verdict
    from memories.store.models import Scope
    from memories.store.roles import STEWARDS_GROUP

    steward = User.objects.create_user("steward")
    steward.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    member = User.objects.create_user("member")
    conflicted = Scope.objects.create(member_source_types=None, name="bench")
    conflicted.members.add(steward, member)
    grow(conflicted, steward, member, 0, size)
    others = []
    for n in range(OTHER_SCOPES):
        scope = Scope.objects.create(member_source_types=None, name=f"bench-{n + 2}")
        scope.members.add(steward, member)
        others.append(scope)
        spread(scope, member, size)
    admitted = admit(others, steward)
    challenge(others, member, steward, admitted[5::4])
    # A few challenges through the action, suspending admitted facts.
    for fact_id in admitted[:5]:
        file_challenge(actor=member, fact_id=fact_id, ground="doubt", evidence=["ref"])
    first = conflicted.facts.order_by("recorded_at", "id").first()
    record_verdict(actor=steward, fact_id=first.pk, verdict="admitted", ground="ok")
    audit(conflicted, others, steward, size)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("SELECT count(*) FROM memories_fact")
        (count,) = cursor.fetchone()
        cursor.execute(
            """SELECT id FROM memories_fact WHERE t_invalid IS NULL ORDER BY md5(id::text)
                LIMIT 1000"""
        )
        fact_ids = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            """SELECT scope_id, subject_id FROM memories_fact
                WHERE scope_id <> %s GROUP BY scope_id, subject_id
                ORDER BY md5(subject_id::text) LIMIT 200""",
            [conflicted.pk],
        )
        subjects = [tuple(row) for row in cursor.fetchall()]
    return Store(
        facts=count,
        scope_ids=[conflicted.pk, *(scope.pk for scope in others)],
        steward_id=steward.pk,
        agent_id=member.pk,
        agent_token="",
        fact_ids=fact_ids,
        subjects=subjects,
        conflict_scope_id=conflicted.pk,
        system_fact_ids=admitted[:1000],
    )


def grow(scope, steward, member, start: int, stop: int) -> None:
    """Bulk-write open conflicts ``start`` .. ``stop`` (outranked: code vs agent-note)."""
    from django.db import transaction

    from memories.store.models import (
        Conflict,
        ConflictMember,
        Entity,
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
                    conflict=conflict,
                    scope=scope,
                    fact=incoming,
                    role=MemberRole.INCOMING,
                    disputes=True,
                ),
                ConflictMember(
                    conflict=conflict,
                    scope=scope,
                    fact=standing,
                    role=MemberRole.EXISTING,
                    disputes=False,
                ),
            ]
        _save(facts)
        Conflict.objects.bulk_create(conflicts, batch_size=2_000)
        ConflictMember.objects.bulk_create(members, batch_size=2_000)


VALUES_A_SUBJECT = 10


def spread(scope, author, size: int) -> None:
    """``size`` live facts in ``scope``: ten ``core/uses`` values a subject, system and user
    facts alternating by subject, every fifth subject's of an episode."""
    from django.db import transaction

    from memories.store.models import Entity, Predicate, SourceType

    uses = Predicate.objects.get(name="core/uses")
    code = SourceType.objects.get(name="code")
    origin = datetime(2026, 2, 1, tzinfo=UTC)
    with transaction.atomic():
        entities = Entity.objects.bulk_create(
            Entity(scope=scope, name=f"app-{i:06}", key=f"app-{i:06}")
            for i in range(size // VALUES_A_SUBJECT)
        )
        facts = []
        for i, entity in enumerate(entities):
            for value in range(VALUES_A_SUBJECT):
                at = origin + timedelta(seconds=i * VALUES_A_SUBJECT + value)
                fact = _fact(scope, entity, uses, code, author, f"lib-{value}", 0.9, at)
                fact.bucket = "user" if i % 2 else "system"
                fact.episode = f"episode-{i // 50}" if i % 5 == 0 else ""
                facts.append(fact)
        _save(facts)


def admit(scopes, steward) -> list:
    """Admit every other system fact of ``scopes`` by COPY; the admitted facts' ids."""
    from django.db import connection

    from admissions.models import Record

    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT id, scope_id FROM memories_fact
                WHERE scope_id = ANY(%s) AND bucket = 'system' ORDER BY recorded_at, id""",
            [[scope.pk for scope in scopes]],
        )
        chosen = cursor.fetchall()[::2]
    at = datetime(2026, 3, 1, tzinfo=UTC)
    Record.objects.bulk_create(
        (
            Record(
                scope_id=scope_id,
                fact_id=fact_id,
                role="admission",
                verdict="admitted",
                ground="checked",
                author=steward,
                inserted_at=at + timedelta(seconds=n),
            )
            for n, (fact_id, scope_id) in enumerate(chosen)
        ),
        batch_size=2_000,
    )
    return [fact_id for fact_id, _ in chosen]


def challenge(scopes, member, steward, fact_ids: list) -> None:
    """A challenge without evidence of each of ``fact_ids``, every other one refuted."""
    from admissions.models import Record
    from memories.store.models import Fact

    scope_of = dict(Fact.objects.filter(pk__in=fact_ids).values_list("pk", "scope_id"))
    at = datetime(2026, 3, 5, tzinfo=UTC)
    challenges = [
        Record(
            id=uuid.uuid4(),
            scope_id=scope_of[fact_id],
            fact_id=fact_id,
            role="challenge",
            ground="doubt",
            author=member,
            inserted_at=at + timedelta(seconds=n),
        )
        for n, fact_id in enumerate(fact_ids)
    ]
    Record.objects.bulk_create(challenges, batch_size=2_000)
    Record.objects.bulk_create(
        (
            Record(
                scope_id=record.scope_id,
                fact_id=record.fact_id,
                role="refutation",
                ground="answered",
                challenge=record,
                challenge_role="challenge",
                author=steward,
                inserted_at=record.inserted_at + timedelta(hours=1),
            )
            for record in challenges[::2]
        ),
        batch_size=2_000,
    )


def audit(conflicted, others, steward, size: int) -> None:
    """``size`` audit entries over the scopes, the latest first in no scope in particular;
    every other one automatic."""
    from memories.store.models import AuditEntry

    scopes = [conflicted, *others]
    at = datetime(2026, 3, 2, tzinfo=UTC)
    AuditEntry.objects.bulk_create(
        (
            AuditEntry(
                at=at + timedelta(seconds=n),
                actor=None if n % 2 else steward,
                scope=scopes[n % len(scopes)],
                action="superseded" if n % 2 else "asserted",
                target_type="fact",
                target_id=str(uuid.UUID(int=n + 1)),
                before=None,
                after={"object": f"value {n}"},
                reason="" if n % 2 else "seen",
                rule="truth: policy: supersede" if n % 2 else "",
            )
            for n in range(size)
        ),
        batch_size=2_000,
    )


def _save(facts: list) -> None:
    from memories.store.models import Fact

    Fact.objects.bulk_create(facts, batch_size=2_000)


def _fact(scope, entity, predicate, source, author, value, confidence, at):
    from memories.store.models import Fact

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
