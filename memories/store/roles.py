"""Who is a steward, and which scopes an account may read (SPEC §6).

A steward is an *active* account holding ``memories.steward_scope`` either
globally (through a group, usually "stewards") or on one scope as a
django-guardian object permission. Roles are only ever read from these
permission tables, never from anything a request says about itself.

guardian's ``user.has_perm(perm, obj)`` answers False for a user holding only
the global permission, so both checks are made explicitly.

Like Django's own permission cache, an account's roles are read once per
user object, in one query: a request sees the memberships it started with, and code that
changes an account's memberships and goes on using the same object must
fetch the account again.

This module reads the permission tables and the account's own relations
only, never ``memories.store.models``: the models' QuerySets (``visible_to``,
``readable_by``) are written in terms of these ids.
"""

import functools
from dataclasses import dataclass

import psycopg
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.postgres.expressions import ArraySubquery
from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet
from guardian.models import GroupObjectPermission, UserObjectPermission

STEWARD_PERMISSION = "memories.steward_scope"
STEWARDS_GROUP = "stewards"

_APP_LABEL, _CODENAME = STEWARD_PERMISSION.split(".")
# The object permission on a scope (guardian's generic rows name the object
# by content type and primary key as text).
_ON_SCOPES = Q(
    content_type__app_label=_APP_LABEL,
    content_type__model="scope",
    permission__codename=_CODENAME,
)


@dataclass(frozen=True)
class _Roles:
    global_steward: bool
    steward_scope_ids: list[int]
    member_scope_ids: list[int]


def _roles_query(account_pk) -> QuerySet:
    """The ORM statement of an account's roles: what ``_roles`` runs, compiled once."""
    account = OuterRef("pk")
    held = Permission.objects.filter(
        Q(user=account) | Q(group__user=account),
        content_type__app_label=_APP_LABEL,
        codename=_CODENAME,
    )
    on_scopes = UserObjectPermission.objects.filter(_ON_SCOPES, user=account)
    on_scopes_by_group = GroupObjectPermission.objects.filter(_ON_SCOPES, group__user=account)
    user_model = get_user_model()
    memberships = user_model.member_scopes.through.objects.filter(user=account)
    return (
        user_model._default_manager.filter(pk=account_pk)
        .annotate(
            held=Exists(held),
            on_scopes=ArraySubquery(on_scopes.values("object_pk")),
            on_scopes_by_group=ArraySubquery(on_scopes_by_group.values("object_pk")),
            memberships=ArraySubquery(memberships.values("scope_id")),
        )
        .values_list("held", "on_scopes", "on_scopes_by_group", "memberships")
        .order_by()
    )


_ACCOUNT = -20_261_201  # stands for the account's id while the statement is compiled


@functools.cache
def _roles_statement() -> tuple[str, tuple]:
    """``_roles_query``'s SQL and its parameters, with the account's id still to fill in.

    Read on every request, so built by the ORM once per process and run as
    a prepared statement (docs/bench-log/2026-12-01-reads.md).
    """
    sql, parameters = _roles_query(_ACCOUNT).query.sql_with_params()
    assert parameters.count(_ACCOUNT) == 1, parameters
    return sql, parameters


def _roles(user) -> _Roles:
    """What the permission tables and the memberships say of ``user``, in one statement.

    Read once per user object (for a request, once per request, like Django's
    own permission cache): every list page and lookup filters by these ids.
    """
    cached = getattr(user, "_claimgraph_roles", None)
    if cached is not None:
        return cached
    sql, parameters = _roles_statement()
    parameters = [user.pk if value == _ACCOUNT else value for value in parameters]
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, parameters, prepare=True)
        found = cursor.fetchone()
    held_globally, on_scopes_ids, by_group_ids, member_ids = found or (False, [], [], [])
    cached = _Roles(
        global_steward=user.is_superuser or held_globally,
        # guardian names the object by its primary key as text.
        steward_scope_ids=sorted({int(pk) for pk in [*on_scopes_ids, *by_group_ids]}),
        member_scope_ids=sorted(member_ids),
    )
    user._claimgraph_roles = cached
    return cached


def is_global_steward(user) -> bool:
    """A superuser, or an account holding the permission itself or through a group.

    Django's ``has_perm`` would load all of the account's user and group
    permissions in two queries; this is read with the account's other roles.
    """
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    return _roles(user).global_steward


def steward_scope_ids(user) -> list[int]:
    """The ids of the scopes on which ``user`` holds the object permission, itself or by group.

    Handed to queries as a plain list: PostgreSQL plans ``scope_id = ANY(...)``
    far faster than guardian's permission subquery.
    """
    if not user.is_authenticated or not user.is_active:
        return []
    return _roles(user).steward_scope_ids


def readable_scope_ids(user) -> list[int] | None:
    """The ids of the scopes ``user`` may read (member or steward); None means every scope.

    An inactive or anonymous account reads nothing.
    """
    if not user.is_authenticated or not user.is_active:
        return []
    if is_global_steward(user):
        return None
    roles = _roles(user)
    return sorted({*roles.member_scope_ids, *roles.steward_scope_ids})


def reads_scope(user, scope) -> bool:
    """Whether ``scope`` is among ``ScopeQuerySet.visible_to(user)``, from the ids read once."""
    readable = readable_scope_ids(user)
    return readable is None or scope.pk in readable


def is_steward_of(user, scope) -> bool:
    """Whether ``user`` may act as a steward in ``scope``.

    From the ids ``steward_scope_ids`` remembers on the user object, not
    guardian's ``has_perm``, which reads the permission tables again on
    every call: a page asks this of several facts and scopes.
    """
    return stewards_scope_id(user, scope.pk)


def stewards_scope_id(user, scope_id: int) -> bool:
    """``is_steward_of`` for a scope known by its id only (the import's lines)."""
    if not user.is_authenticated or not user.is_active:
        return False
    return is_global_steward(user) or scope_id in steward_scope_ids(user)


def is_member_of(user, scope) -> bool:
    """Whether ``user`` may read ``scope``: a member or one of its stewards."""
    if not user.is_authenticated or not user.is_active:
        return False
    return scope.members.filter(pk=user.pk).exists() or is_steward_of(user, scope)
