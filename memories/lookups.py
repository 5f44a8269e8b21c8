"""Lookups that authorize before they read, and entity resolution.

Every face and action finds the rows it names through these helpers, which
filter by what the caller may see in the query itself: anything outside it
answers exactly as a missing row does (``NotFound``).
"""

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Model

from memories.core.normalize import value_key
from memories.errors import NotFound
from memories.models import Conflict, Entity, Fact, Scope
from memories.roles import is_steward_of


@contextmanager
def hot_cursor() -> Iterator[psycopg.Cursor]:
    """A server-binding cursor on Django's own connection, for the write path's hot queries.

    psycopg prepares a statement that is executed with ``prepare=True``, so
    PostgreSQL plans each of these queries once per connection instead of on
    every assertion (Django's cursors bind on the client and are planned every
    time) -- on a connection whose ``prepare_threshold`` is set, as the
    settings do: Django sets it to None (no prepared statements at all)
    unless the database OPTIONS name one. Same connection, so same
    transaction as the ORM around it; errors arrive as Django's database
    exceptions, like any other query's.
    """
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor


class Columns:
    """Some of a model's columns in a raw SELECT, and the instance built back from them.

    For the console's hot reads, run with :func:`rows`: building the same
    query through the ORM cost more Python than the rest of the page.
    ``names`` defaults to every concrete field; an instance built from fewer
    defers the rest, as ``only()`` would. Values go through the fields' own
    converters (a JSON column arrives as text), as the ORM does.
    """

    def __init__(self, model: type[Model], alias: str, names: Sequence[str] = ()) -> None:
        fields = [
            field
            for field in model._meta.concrete_fields
            if not names or field.name in names or field.attname in names
        ]
        self.model = model
        self.sql = ", ".join(f"{alias}.{field.column}" for field in fields)
        self.width = len(fields)
        self._attnames = [field.attname for field in fields]
        self._converters = [
            (index, converter)
            for index, field in enumerate(fields)
            for converter in field.get_db_converters(connection)
        ]

    def build(self, row: Sequence[Any], start: int = 0) -> Any:
        """The instance from ``row[start:start + width]``; None for a LEFT JOIN's empty side."""
        values = list(row[start : start + self.width])
        if values[0] is None:
            return None
        for index, converter in self._converters:
            values[index] = converter(values[index], None, connection)
        return self.model.from_db(connection.alias, self._attnames, values)


def rows(sql: str, params: Sequence[Any] | dict[str, Any]) -> list[tuple]:
    """All rows of ``sql`` on Django's connection, the values bound by the server.

    Prepared, like the write path's statements (see :func:`hot_cursor`):
    PostgreSQL parses and plans it once per connection. Logged like an ORM
    query whenever Django logs queries (DEBUG, or a test's
    ``django_assert_num_queries``), so the console's query counts see it.
    """
    started = time.perf_counter()
    with hot_cursor() as cursor:
        cursor.execute(sql, params, prepare=True)
        found = cursor.fetchall()
    if connection.queries_logged:
        connection.queries_log.append(
            {"sql": sql, "time": f"{time.perf_counter() - started:.3f}", "params": params}
        )
    return found


def batch(*statements: tuple[str, Sequence[Any] | dict[str, Any]]) -> list[list[tuple]]:
    """The rows of each statement, the statements sent to PostgreSQL together.

    psycopg's pipeline mode sends them all before reading any answer (one
    round trip), each prepared like :func:`rows`'s. For reads that do not
    depend on each other. Each is logged like an ORM query.
    """
    started = time.perf_counter()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        cursors = [psycopg.Cursor(connection.connection) for _ in statements]
        try:
            with connection.connection.pipeline():
                for cursor, (sql, params) in zip(cursors, statements, strict=True):
                    cursor.execute(sql, params, prepare=True)
            found = [cursor.fetchall() for cursor in cursors]
        finally:
            for cursor in cursors:
                cursor.close()
    if connection.queries_logged:
        took = f"{time.perf_counter() - started:.3f}"
        for sql, params in statements:
            connection.queries_log.append({"sql": sql, "time": took, "params": params})
    return found


def writable_scope(actor, name: str) -> Scope:
    """The scope ``actor`` may write, by name; absent and forbidden answer alike.

    Who may write a scope: its members, and its stewards. Members are the
    common case and cost one query; stewards who are not members are checked
    only when that finds nothing. The write path's ``claimgraph_open_slot``
    (memories/sql/slots.sql) answers the members' case in the same call that
    opens the slot and comes here for everyone else.
    """
    if not actor.is_authenticated or not actor.is_active:
        raise NotFound("scope")
    scope = Scope.objects.filter(name=name, members=actor).first()
    if scope is None:
        scope = Scope.objects.filter(name=name).first()
        if scope is None or not is_steward_of(actor, scope):
            raise NotFound("scope")
    return scope


def readable_fact(actor, fact_id: UUID | str) -> Fact:
    """A fact ``actor`` may read (``Fact.objects.readable_by``), for display; else NotFound."""
    try:
        fact_uuid = UUID(str(fact_id))
    except ValueError:
        raise NotFound("fact") from None
    try:
        return Fact.objects.readable_by(actor).for_display().get(pk=fact_uuid)
    except Fact.DoesNotExist:
        raise NotFound("fact") from None


FACT = Columns(Fact, "f")
_USERS = get_user_model()._meta.db_table
_ENTITIES = Entity._meta.db_table

# A fact row: the fact's columns, then the names of its scope, subject and
# object entity (or NULL) and its author's username. By a lookup each, not
# joins: with four more tables to join PostgreSQL spent longer choosing a
# join order (0.5 to 1.4 ms) than reading the rows.
FACT_ROW_COLUMNS = f"""{FACT.sql},
    (SELECT s.name FROM {Scope._meta.db_table} s WHERE s.id = f.scope_id),
    (SELECT e.name FROM {_ENTITIES} e WHERE e.id = f.subject_id),
    (SELECT o.name FROM {_ENTITIES} o WHERE o.id = f.object_ref_id),
    (SELECT u.username FROM {_USERS} u WHERE u.id = f.author_id)"""
FACT_ROW_WIDTH = FACT.width + 4


def fact_from_row(row: Sequence[Any], start: int = 0) -> Fact:
    """A fact from FACT_ROW_COLUMNS, with its scope, subject, object entity and author.

    Those four carry their names (the author its username) and ids: the
    console shows nothing else of them, and any other field is read on
    first use, as after ``only()``.
    """
    fact = FACT.build(row, start)
    scope, subject, obj, author = row[start + FACT.width : start + FACT_ROW_WIDTH]
    alias = connection.alias
    fact.scope = Scope.from_db(alias, ["id", "name"], [fact.scope_id, scope])
    fact.subject = Entity.from_db(
        alias, ["id", "scope_id", "name"], [fact.subject_id, fact.scope_id, subject]
    )
    fact.object_ref = (
        Entity.from_db(alias, ["id", "scope_id", "name"], [fact.object_ref_id, fact.scope_id, obj])
        if fact.object_ref_id is not None
        else None
    )
    fact.author = get_user_model().from_db(alias, ["id", "username"], [fact.author_id, author])
    return fact


def find_entity(scope: Scope, name: str) -> Entity | None:
    """The entity named ``name`` (or with it as an alias) in ``scope``, if any."""
    return _find_entity(scope, value_key(name))


def _find_entity(scope: Scope, key: str) -> Entity | None:
    # An exact name wins over an alias, so the lookup is deterministic when
    # one entity's name is another's alias. An entity a steward merged into
    # another answers as that other one (memories/sql/merges.sql); following the
    # merge costs a second query only while a merge of it is in force.
    # Raw SQL because this runs on every assertion: by key through the unique
    # index, and by alias through the GIN index only when the key finds nothing.
    select = f"SELECT {_ENTITY_COLUMNS} FROM {Entity._meta.db_table} e"
    with hot_cursor() as cursor:
        cursor.execute(
            select + " WHERE e.scope_id = %s AND e.key = %s", [scope.pk, key], prepare=True
        )
        row = cursor.fetchone()
        if row is None:
            cursor.execute(
                select
                + " WHERE e.scope_id = %s AND e.alias_keys @> ARRAY[%s]::varchar[]"
                + " ORDER BY e.id LIMIT 1",
                [scope.pk, key],
                prepare=True,
            )
            row = cursor.fetchone()
    return entity_from_row(row)


# The columns of an entity row ``e``, and the entity it is merged into while
# a steward's merge of it is in force (memories/sql/merges.sql), or NULL.
_ENTITY_COLUMNS = """
    e.id, e.scope_id, e.name, e.key, e.type, e.aliases, e.alias_keys, e.created_at,
    (SELECT m.into_id FROM claimgraph_merge_in_force(e.id) AS m)
"""


def entity_from_row(row: Sequence[Any] | None) -> Entity | None:
    if row is None or row[0] is None:
        return None
    *fields, merged_into = row
    if merged_into is not None:
        return Entity.objects.get(pk=merged_into)
    return Entity(*fields)


def get_or_create_entity(scope: Scope, name: str) -> Entity:
    """Find by name or alias, else create, safely under concurrent writers.

    ``INSERT … ON CONFLICT DO NOTHING`` waits for a concurrent transaction
    inserting the same key and then yields to it, so sixteen writers naming a
    new entity at once end with one row.
    """
    key = value_key(name)
    found = _find_entity(scope, key)
    if found is not None:
        return found
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Entity._meta.db_table}
                (scope_id, name, key, type, aliases, alias_keys, created_at)
            VALUES (%s, %s, %s, '', '{{}}', '{{}}', now())
            ON CONFLICT (scope_id, key) DO NOTHING
            """,
            [scope.pk, name.strip(), key],
        )
    # Through the lookup, not a plain get: the row we yielded to may have
    # been merged into another entity since.
    found = _find_entity(scope, key)
    assert found is not None, "an entity row, once inserted, is never deleted"
    return found


def visible_conflict(actor, conflict_id: UUID | str) -> Conflict:
    """A conflict ``actor`` may see (``Conflict.objects.visible_to``), with its scope,
    subject and predicate; anything else is :class:`NotFound`."""
    try:
        conflict_uuid = UUID(str(conflict_id))
    except ValueError:
        raise NotFound("conflict") from None
    try:
        return (
            Conflict.objects.visible_to(actor)
            .select_related("scope", "subject", "predicate")
            .get(pk=conflict_uuid)
        )
    except Conflict.DoesNotExist:
        raise NotFound("conflict") from None
