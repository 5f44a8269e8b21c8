"""Lookups that authorize before they read, and entity resolution.

Every face and action finds the rows it names through these helpers, which
filter by what the caller may see in the query itself: anything outside it
answers exactly as a missing row does (``NotFound``).
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple
from uuid import UUID

import psycopg
from django.db import connection

from memories.core.normalize import name_skeleton, value_key
from memories.store.errors import NotFound
from memories.store.models import Conflict, Entity, Fact, Scope
from memories.store.roles import is_steward_of


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


def scope_named(name: str) -> Scope | None:
    """The scope called ``name``, if any; who may read it is the caller's to check.

    A prepared statement: every recall and list of an agent names its scope.
    """
    columns = ", ".join(field.column for field in Scope._meta.concrete_fields)
    with hot_cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM {Scope._meta.db_table} WHERE name = %s", [name], prepare=True
        )
        row = cursor.fetchone()
    if row is None:
        return None
    return Scope.from_db(
        connection.alias, [field.attname for field in Scope._meta.concrete_fields], row
    )


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


class Named(NamedTuple):
    """The entity a name found, and whether only its look found it."""

    entity: Entity
    # Found by its confusable skeleton, not by its key or an alias: the name
    # given is a look-alike spelling of the entity's (memories/core/normalize.py).
    looked_alike: bool


def find_entity(scope: Scope, name: str) -> Entity | None:
    """The entity named ``name`` (or an alias, or a look-alike of either) in ``scope``, if any."""
    with hot_cursor() as cursor:
        cursor.execute(
            _ENTITY_SQL, [scope.pk, None, value_key(name), name_skeleton(name), False], prepare=True
        )
        row = cursor.fetchone()
    found = named_from_row(row)
    return found.entity if found else None


# By key, else by alias, else by look, else (when asked) created: the rule's
# one statement, in memories/sql/slots.sql. An entity a steward merged into
# another answers as that other one (memories/sql/merges.sql): following the
# merge costs a second query only while a merge of it is in force.
_ENTITY_SQL = "SELECT * FROM claimgraph_entity(%s, %s, %s, %s, %s)"


def named_from_row(row: Sequence[Any] | None) -> Named | None:
    """A row of ``claimgraph_entity``: the entity's columns, merged_into, looked_alike."""
    if row is None or row[0] is None:
        return None
    *fields, merged_into, looked_alike = row
    if merged_into is not None:
        # A merge never crosses scopes: the scope ties the read to one shard.
        return Named(Entity.objects.get(scope_id=fields[1], pk=merged_into), looked_alike)
    return Named(Entity.from_db(connection.alias, None, fields), looked_alike)


def get_or_create_entity(scope: Scope, name: str) -> Named:
    """Find by name, alias or look, else create, safely under concurrent writers.

    ``INSERT … ON CONFLICT DO NOTHING`` waits for a concurrent transaction
    inserting the same key and then yields to it, and a first mention takes
    the lock of its skeleton first, so sixteen writers naming a new entity
    at once, in one spelling or in look-alike ones, end with one row.
    """
    with hot_cursor() as cursor:
        cursor.execute(
            _ENTITY_SQL,
            [scope.pk, name.strip(), value_key(name), name_skeleton(name), True],
            prepare=True,
        )
        row = cursor.fetchone()
    found = named_from_row(row)
    assert found is not None, "an entity row, once inserted, is never deleted"
    return found


def hold_entity(scope: Scope, name: str) -> Named:
    """``get_or_create_entity`` for a write about to name the entity: held against merges.

    The SQL function ``claimgraph_entity_held`` (memories/sql/slots.sql)
    takes the entity's own lock shared, which a merge of it takes
    exclusively, and looks the merge up again after it: the entity answered
    is never merged away before the write commits (a merge already in force
    answers its survivor). Call it before taking any slot lock.
    """
    with hot_cursor() as cursor:
        cursor.execute(
            "SELECT * FROM claimgraph_entity_held(%s, %s, %s, %s)",
            [scope.pk, name.strip(), value_key(name), name_skeleton(name)],
            prepare=True,
        )
        row = cursor.fetchone()
    found = named_from_row(row)
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
