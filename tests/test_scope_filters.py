"""Every hot-path statement on a per-scope table names its scope (docs/scale-out.md).

Distributed by scope on Citus, a statement runs on one shard only when each
per-scope table it reads is tied to one scope (``tests/scope_sql.py`` says
exactly what counts). These tests run each hot path on a real store,
capture every statement it sends — Django's own and those of the write
path's psycopg cursors (``memories.store.lookups.hot_cursor``), which
``connection.execute_wrapper`` never sees, so the capture listens on
psycopg's cursor class instead — and read each one, and each statement of
the SQL functions, views and triggers it reaches, from our ``sql/`` files.

What is not tied to a scope today is listed below with why, and how to tie
it: ``CROSSES_SCOPES`` for walks that are meant to read every scope (they
must still be co-located: tied to each other by ``scope_id``), and
``KNOWN_UNFILTERED`` for statements to fix. An entry that no longer matches
fails, so both lists only shrink; a new statement on a per-scope table that
names no scope fails too.
"""

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.utils import timezone
from psycopg import sql as psql

from accounts.actions import issue_token
from admissions.actions import file_challenge, record_verdict
from admissions.selectors import fact_status, recall
from memories.maintenance.crawler import run_crawl
from memories.store.models import Fact, Scope
from memories.write.actions import assert_fact
from memories.write.merges import merge_entities
from tests.scope_sql import EVERY_SHARD, PER_SCOPE, ROUTER, UNSCOPED, Reading, ServerSql, read
from tests.scope_sql import tables_written as written_by

ROOT = Path(__file__).resolve().parent.parent
SERVER_SQL = ServerSql.load(ROOT)

# (path, where, verb, table): where is "client" for a statement sent by Python,
# or the SQL function, view or trigger function it runs inside; verb is the
# statement's first word (select, update, insert, delete, with).
Key = tuple[str, str, str, str]

# Reads that cross scopes on purpose. Each must stay co-located (its per-scope
# tables tied to each other by scope_id) so Citus can run it on every shard at
# once; docs/scale-out.md, "Statements that cross scopes", says how each runs.
CROSSES_SCOPES: dict[Key, str] = {
    ("crawl", "client", "select", "memories_fact"): (
        "the crawler walks every scope's active system slots (memories/maintenance/crawler.py); on "
        "Citus a multi-shard scan, or one walk per scope"
    ),
    ("conflicts, global steward", "client", "select", "memories_conflict"): (
        "a global steward's queue lists every scope's conflicts; multi-shard, merged by "
        "(opened_at, id) on the coordinator"
    ),
}

# Statements on per-scope tables that name no scope although they could: why,
# the file and function that sends them, and the fix. They are in the write
# path's, the reads' or the crawler's files, or wait for a schema change
# (ConflictMember and Outcome.facts carry no scope_id yet; Django joins a
# foreign key on the id alone): docs/scale-out.md, "The migration path".
WRITE_BY_ID = (
    "memories/store/apply.py (write path): _REINFORCE and _CLOSE update memories_fact WHERE id = "
    "%s, CloseConflict updates memories_conflict by pk, _close_moot prefetches members__fact by "
    "id, _MARK_DECAYED (the crawler's) updates by id; memories/write/actions.py assert_fact reads "
    "the reinforced fact with for_display().get(pk). Fix: Reinforce, CloseInterval, MarkDecayed "
    "and CloseConflict carry scope_id (memories/core/effects.py) and each statement adds "
    "scope_id = %s"
)
FACT_BY_ID_FOR_A_GLOBAL_STEWARD = (
    "memories/store/lookups.py readable_fact: for a global steward readable_by() names no scope, "
    "so a fact named by its id alone is looked for on every shard (docs/scale-out.md, section 3: "
    "acceptable for a person); the entity join is ENTITY_BY_ID"
)
MEMBER_HAS_NO_SCOPE = (
    "memories_conflictmember has scope_id since memories 0017, and the reads of one fact's "
    "memberships name it (FactQuerySet.with_disputed, shown_fact, recall's statement), but "
    "these reach members by conflict or fact ids alone: the prefetches of a page's members "
    "(ConflictQuerySet.with_candidates, for_display: conflict_id IN (...), their facts joined "
    "by id), ConflictQuerySet.readable_by's private-member test, ConflictMemberQuerySet.ties "
    "and apply._close_moot (fact ids of any scope). Fix: pass the page's or the decision's "
    "scopes down (ConflictMemberQuerySet.in_scope_of), and relations on (scope, id) for the "
    "joins (docs/scale-out.md migration step 3)"
)
ENTITY_BY_ID = (
    "select_related of a subject or object entity (FACT_DISPLAY_RELATIONS, the conflict "
    "queue's select_related('subject')) joins memories_entity on its id alone, as every "
    "Django foreign key does. Fix: docs/scale-out.md migration step 3 (relations on (scope, "
    "id)), which makes Django's join name the scope"
)

KNOWN_UNFILTERED: dict[Key, str] = {
    ("GET /conflicts", "client", "select", "memories_conflict"): MEMBER_HAS_NO_SCOPE,
    ("GET /conflicts", "client", "select", "memories_conflictmember"): MEMBER_HAS_NO_SCOPE,
    ("GET /conflicts", "client", "select", "memories_entity"): ENTITY_BY_ID,
    (
        "GET /conflicts",
        "client",
        "select",
        "memories_fact",
    ): MEMBER_HAS_NO_SCOPE,
    ("GET /facts/{id}", "client", "select", "memories_entity"): ENTITY_BY_ID,
    ("GET /truth", "client", "select", "memories_entity"): ENTITY_BY_ID,
    ("assert", "client", "select", "memories_conflict"): MEMBER_HAS_NO_SCOPE,
    ("assert", "client", "select", "memories_conflictmember"): MEMBER_HAS_NO_SCOPE,
    ("assert", "client", "select", "memories_fact"): f"{WRITE_BY_ID}; and {MEMBER_HAS_NO_SCOPE}",
    ("assert", "client", "update", "memories_conflict"): WRITE_BY_ID,
    ("assert", "client", "update", "memories_fact"): WRITE_BY_ID,
    ("assert merged subject", "client", "select", "memories_entity"): ENTITY_BY_ID,
    ("assert merged subject", "client", "select", "memories_fact"): WRITE_BY_ID,
    ("assert merged subject", "client", "update", "memories_fact"): WRITE_BY_ID,
    ("conflicts, global steward", "client", "select", "memories_conflict"): MEMBER_HAS_NO_SCOPE,
    (
        "conflicts, global steward",
        "client",
        "select",
        "memories_conflictmember",
    ): MEMBER_HAS_NO_SCOPE,
    ("conflicts, global steward", "client", "select", "memories_entity"): ENTITY_BY_ID,
    (
        "conflicts, global steward",
        "client",
        "select",
        "memories_fact",
    ): MEMBER_HAS_NO_SCOPE,
    ("console conflicts", "client", "select", "memories_conflictmember"): MEMBER_HAS_NO_SCOPE,
    ("console conflicts", "client", "select", "memories_entity"): ENTITY_BY_ID,
    ("console conflicts", "client", "select", "memories_fact"): MEMBER_HAS_NO_SCOPE,
    ("crawl", "client", "select", "memories_conflict"): MEMBER_HAS_NO_SCOPE,
    ("crawl", "client", "select", "memories_conflictmember"): MEMBER_HAS_NO_SCOPE,
    ("crawl", "client", "select", "memories_fact"): MEMBER_HAS_NO_SCOPE,
    ("crawl", "client", "update", "memories_fact"): WRITE_BY_ID,
    ("file challenge", "client", "select", "memories_entity"): ENTITY_BY_ID,
    ("recall", "client", "select", "memories_entity"): ENTITY_BY_ID,
    ("record rejection", "client", "select", "memories_entity"): ENTITY_BY_ID,
    ("record rejection", "client", "select", "memories_fact"): FACT_BY_ID_FOR_A_GLOBAL_STEWARD,
    ("record rejection", "client", "update", "memories_conflict"): WRITE_BY_ID,
    ("record verdict", "client", "select", "memories_entity"): ENTITY_BY_ID,
    ("record verdict", "client", "select", "memories_fact"): FACT_BY_ID_FOR_A_GLOBAL_STEWARD,
}


# --- capturing what a path sends ----------------------------------------------------------


@contextmanager
def captured() -> Iterator[list[str]]:
    """Every statement psycopg is asked to run meanwhile, as text.

    Django's cursors are psycopg cursors too, so listening on psycopg's
    classes hears both the ORM and the write path's server-binding cursors.
    """
    seen: list[str] = []

    def text(cursor, query) -> str:
        if isinstance(query, psql.Composable):
            return query.as_string(cursor.connection)
        return query.decode() if isinstance(query, bytes) else str(query)

    originals = {
        (psycopg.Cursor, "execute"): psycopg.Cursor.execute,
        (psycopg.Cursor, "executemany"): psycopg.Cursor.executemany,
        (psycopg.Cursor, "copy"): psycopg.Cursor.copy,
        (psycopg.ServerCursor, "execute"): psycopg.ServerCursor.execute,
    }

    def spy(original: Callable) -> Callable:
        def run(cursor, query, *args, **kwargs):
            seen.append(text(cursor, query))
            return original(cursor, query, *args, **kwargs)

        return run

    for (cls, name), original in originals.items():
        setattr(cls, name, spy(original))
    try:
        yield seen
    finally:
        for (cls, name), original in originals.items():
            setattr(cls, name, original)


def readings(statements: list[str]) -> Iterator[tuple[str, Reading]]:
    """Each statement read, then what it runs inside the database, each once."""
    done: set[str] = set()

    def inside(reading: Reading) -> Iterator[tuple[str, Reading]]:
        reached = list(reading.calls)
        for table in written_by(reading.statement):
            reached.extend(SERVER_SQL.triggers.get(table, ()))
        for name in reached:
            if name in done or name not in SERVER_SQL.functions:
                continue
            done.add(name)
            for body in SERVER_SQL.functions[name]:
                inner = read(body)
                yield name, inner
                yield from inside(inner)
        for ref in reading.references:
            if ref.table in SERVER_SQL.views and ref.table not in done:
                done.add(ref.table)
                view = read(SERVER_SQL.views[ref.table])
                # The caller supplies the scope: the view need only be co-located.
                if view.verdict == EVERY_SHARD:
                    view.verdict, view.unscoped = ROUTER, []
                yield ref.table, view
                yield from inside(view)

    for statement in statements:
        reading = read(statement)
        yield "client", reading
        yield from inside(reading)


def violations(path: str, statements: list[str]) -> dict[Key, str]:
    """What ``path`` sent that is not tied to a scope and not allowed to cross scopes."""
    found: dict[Key, str] = {}
    for where, reading in readings(statements):
        if reading.verdict == ROUTER:
            continue
        verb = reading.statement.split(None, 1)[0].lower()
        for table in reading.unscoped:
            key = (path, where, verb, table)
            if key in CROSSES_SCOPES and reading.verdict == EVERY_SHARD:
                continue
            found.setdefault(key, f"{reading.verdict}: {' '.join(reading.statement.split())}")
    return found


def held_to_the_lists(path: str, statements: list[str]) -> None:
    found = violations(path, statements)
    known = {key for key in KNOWN_UNFILTERED if key[0] == path}
    new = {key: found[key] for key in found.keys() - known}
    gone = known - found.keys()
    assert not new, "statements on per-scope tables that name no scope:\n" + "\n".join(
        f"    {key!r}: REASON,  # {statement[:300]}" for key, statement in sorted(new.items())
    )
    assert not gone, f"KNOWN_UNFILTERED entries that no longer match (remove them): {gone}"
    unused = {k for k in CROSSES_SCOPES if k[0] == path} - found.keys() - _crossing(statements)
    assert not unused, f"CROSSES_SCOPES entries that no longer match (remove them): {unused}"


def _crossing(statements: list[str]) -> set[Key]:
    """The CROSSES_SCOPES keys some statement still needs (read as every shard)."""
    needed = set()
    for key in CROSSES_SCOPES:
        _path, where, verb, table = key
        for found_where, reading in readings(statements):
            if (
                found_where == where
                and reading.statement.split(None, 1)[0].lower() == verb
                and reading.verdict == EVERY_SHARD
                and table in reading.unscoped
            ):
                needed.add(key)
    return needed


# --- the checker itself ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "verdict", "unscoped"),
    [
        # The negative checks: a per-scope table read by id alone, or joined by id.
        ("SELECT * FROM memories_fact WHERE id = %s", EVERY_SHARD, ["memories_fact"]),
        ("UPDATE memories_fact SET t_invalid = %s WHERE id = %s", EVERY_SHARD, ["memories_fact"]),
        (
            'SELECT * FROM "memories_fact" INNER JOIN "memories_entity"'
            ' ON ("memories_fact"."subject_id" = "memories_entity"."id")'
            ' WHERE "memories_fact"."scope_id" = %s',
            UNSCOPED,
            ["memories_entity"],
        ),
        (
            "SELECT 1 FROM memories_fact f WHERE f.scope_id = %s AND EXISTS"
            " (SELECT 1 FROM memories_conflictmember U0 WHERE U0.fact_id = f.id)",
            UNSCOPED,
            ["memories_conflictmember"],
        ),
        (
            "SELECT 1 FROM memories_scope s JOIN memories_entity e ON e.scope_id = s.id"
            " WHERE s.name = %s",
            EVERY_SHARD,
            ["memories_entity"],
        ),
        # Tied to a scope: a value, a list, a parameter, or another tied table.
        ('SELECT * FROM "memories_fact" WHERE "memories_fact"."scope_id" = %s', ROUTER, []),
        ("SELECT * FROM memories_fact WHERE scope_id IN (%s, %s) AND id = %s", ROUTER, []),
        ("SELECT * FROM memories_fact f WHERE f.scope_id = ANY(%s)", ROUTER, []),
        ("SELECT * FROM memories_fact f WHERE f.scope_id = p_scope_id", ROUTER, []),
        (
            "SELECT * FROM memories_fact f JOIN memories_entity e"
            " ON e.scope_id = f.scope_id AND e.id = f.subject_id WHERE %s = f.scope_id",
            ROUTER,
            [],
        ),
        # Django's join through a relation on (scope, id) (docs/scale-out.md, step 3).
        (
            'SELECT * FROM "memories_fact" INNER JOIN "memories_entity"'
            ' ON ("memories_fact"."scope_id" = "memories_entity"."scope_id"'
            ' AND "memories_fact"."subject_id" = "memories_entity"."id")'
            ' WHERE "memories_fact"."scope_id" = %s',
            ROUTER,
            [],
        ),
        ("INSERT INTO memories_fact (id, scope_id) VALUES (%s, %s)", ROUTER, []),
        ("COPY memories_fact (id, scope_id) FROM STDIN", ROUTER, []),
        ("SELECT * FROM auth_user WHERE id = %s", ROUTER, []),
        # Co-located: tied to each other, to no value (a walk of every scope).
        (
            "SELECT * FROM memories_fact f JOIN memories_entity e"
            " ON e.scope_id = f.scope_id AND e.id = f.subject_id",
            EVERY_SHARD,
            ["memories_entity", "memories_fact"],
        ),
    ],
)
def test_the_reader_tells_a_scoped_statement_from_an_unscoped_one(statement, verdict, unscoped):
    reading = read(statement)
    assert (reading.verdict, reading.unscoped) == (verdict, unscoped)


def test_a_statement_naming_no_scope_is_reported_and_an_unlisted_one_fails():
    statement = "SELECT * FROM memories_fact WHERE id = %s"
    assert violations("nowhere", [statement]) == {
        ("nowhere", "client", "select", "memories_fact"): f"{EVERY_SHARD}: {statement}"
    }
    with pytest.raises(AssertionError, match="name no scope"):
        held_to_the_lists("nowhere", [statement])


def test_the_statements_inside_a_called_function_are_read_too():
    found = dict(readings(["SELECT * FROM claimgraph_slot_facts(%s, %s)"]))
    assert "claimgraph_slot_facts" in found
    assert found["claimgraph_slot_facts"].verdict == ROUTER


def test_every_per_scope_table_exists_and_has_a_scope_or_is_listed_as_lacking_one(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, bool_or(a.attname = 'scope_id') FROM pg_class c"
            " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0"
            " WHERE c.relname = ANY(%s) GROUP BY c.relname",
            [sorted(PER_SCOPE)],
        )
        has_scope = dict(cursor.fetchall())
    assert set(has_scope) == PER_SCOPE
    # docs/scale-out.md, "Schema changes": this one gains a scope_id column
    # (memories_conflictmember has one since memories 0017).
    assert {name for name, has in has_scope.items() if not has} == {"memories_outcome_facts"}


# --- a small real store, and the hot paths over it ---------------------------------------


def body(**fields) -> dict:
    return {
        "scope": "project",
        "subject": "AuthService",
        "predicate": "core/has-version",
        "object": "2.0.0",
        "source_type": "code",
        **fields,
    }


@pytest.fixture
def store(scope, other_scope, member, scope_steward, steward):
    """Two scopes; in ``project`` a conflict, an admitted fact, a challenge, a 'many' slot."""
    other_scope.members.add(member)
    code = assert_fact(actor=member, data=body(confidence=0.95)).fact
    assert_fact(actor=member, data=body(object="3.0.0", source_type="agent-note"))
    for value in ("Postgres", "Redis", "Kafka"):
        assert_fact(actor=member, data=body(predicate="core/uses", object=value))
    record_verdict(actor=steward, fact_id=code.pk, verdict="admitted", ground="checked")
    file_challenge(
        actor=member, fact_id=code.pk, ground="stale", evidence=[{"ref": "ci", "quote": "3.0"}]
    )
    assert_fact(actor=member, data=body(scope="elsewhere", subject="Billing"))
    alias = assert_fact(actor=member, data=body(subject="Auth Svc", predicate="core/uses")).fact
    merge_entities(
        actor=steward, entity_id=alias.subject_id, into_id=code.subject_id, reason="one service"
    )
    return code


def bearer(user: User) -> dict[str, str]:
    _token, secret = issue_token(actor=user, name="scope filters")
    return {"Authorization": f"Bearer {secret}"}


def run(path: str, action: Callable[[], object]) -> None:
    with captured() as statements:
        action()
    assert statements, f"{path} sent nothing: the capture is broken"
    held_to_the_lists(path, statements)


@pytest.mark.django_db
def test_assert_fact_names_its_scope(store, member):
    run("assert", lambda: assert_fact(actor=member, data=body(object="4.0.0")))


@pytest.mark.django_db
def test_assert_about_a_new_subject_names_its_scope(store, member):
    run("assert new subject", lambda: assert_fact(actor=member, data=body(subject="Gateway")))


@pytest.mark.django_db
def test_assert_about_a_merged_subject_names_its_scope(store, member):
    run("assert merged subject", lambda: assert_fact(actor=member, data=body(subject="Auth Svc")))


@pytest.mark.django_db
def test_a_verdict_names_its_scope(store, steward):
    fact = assert_fact(actor=steward, data=body(subject="Ledger")).fact
    run(
        "record verdict",
        lambda: record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="ok"),
    )


@pytest.mark.django_db
def test_a_rejection_that_closes_a_conflict_names_its_scope(store, steward):
    flagged = Fact.objects.get(scope__name="project", object_lit="3.0.0")
    run(
        "record rejection",
        lambda: record_verdict(actor=steward, fact_id=flagged.pk, verdict="rejected", ground="no"),
    )


@pytest.mark.django_db
def test_a_challenge_names_its_scope(store, author):
    run(
        "file challenge",
        lambda: file_challenge(
            actor=author, fact_id=store.pk, ground="wrong", evidence=[{"ref": "x", "quote": "y"}]
        ),
    )


@pytest.mark.django_db
def test_post_fact_names_its_scope(store, member):
    headers = bearer(member)
    client = Client()

    def post():
        answer = client.post(
            "/api/v1/facts",
            json.dumps(body(predicate="core/uses", object="Nats")),
            content_type="application/json",
            headers=headers,
        )
        assert answer.status_code == 201, answer.content

    run("POST /facts", post)


@pytest.mark.django_db
def test_recall_names_its_scope(store, member, scope):
    now = timezone.now()
    run("recall", lambda: recall(viewer=member, scope=scope, subject="AuthService", as_of=now))


@pytest.mark.django_db
def test_get_truth_names_its_scope(store, member):
    headers = bearer(member)
    client = Client()

    def get():
        answer = client.get(
            "/api/v1/truth", {"scope": "project", "subject": "AuthService"}, headers=headers
        )
        assert answer.status_code == 200, answer.content

    run("GET /truth", get)


@pytest.mark.django_db
def test_one_facts_status_names_its_scope(store):
    fact = Fact.objects.get(pk=store.pk)
    run("fact status", lambda: fact_status(fact))


@pytest.mark.django_db
def test_get_fact_names_its_scope(store, member):
    headers = bearer(member)
    client = Client()

    def get():
        answer = client.get(f"/api/v1/facts/{store.pk}", headers=headers)
        assert answer.status_code == 200, answer.content

    run("GET /facts/{id}", get)


@pytest.mark.django_db
def test_get_conflicts_of_a_scope_names_its_scope(store, member):
    headers = bearer(member)
    client = Client()

    def get():
        answer = client.get("/api/v1/conflicts", {"scope": "project"}, headers=headers)
        assert answer.status_code == 200 and answer.json()["results"], answer.content

    run("GET /conflicts", get)


@pytest.mark.django_db
def test_a_global_stewards_conflicts_cross_scopes_co_located(store, steward):
    headers = bearer(steward)
    client = Client()

    def get():
        answer = client.get("/api/v1/conflicts", headers=headers)
        assert answer.status_code == 200 and answer.json()["results"], answer.content

    run("conflicts, global steward", get)


@pytest.mark.django_db
def test_the_conflicts_queue_of_a_scope_steward_names_its_scopes(store, scope_steward):
    client = Client()
    client.force_login(scope_steward)

    def get():
        answer = client.get("/conflicts/")
        assert answer.status_code == 200

    run("console conflicts", get)


@pytest.mark.django_db
def test_the_crawler_walks_every_scope_co_located(store, member):
    Fact.objects.filter(pk=store.pk).update(
        last_reinforced_at=timezone.now() - timedelta(days=3650)
    )
    assert Scope.objects.count() == 2
    run("crawl", run_crawl)
