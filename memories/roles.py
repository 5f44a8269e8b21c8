"""Who is a steward, and which scopes an account may read (SPEC §6).

A steward is an *active* account holding ``memories.steward_scope`` either
globally (through a group, usually "stewards") or on one scope as a
django-guardian object permission. Roles are only ever read from these
permission tables, never from anything a request says about itself.

guardian's ``user.has_perm(perm, obj)`` answers False for a user holding only
the global permission, so both checks are made explicitly.

Like Django's own permission cache, an account's scope ids are read once per
user object: a request sees the memberships it started with, and code that
changes an account's memberships and goes on using the same object must
fetch the account again.

This module reads the permission tables and the account's own relations
only, never ``memories.models``: the models' QuerySets (``visible_to``,
``readable_by``) are written in terms of these ids.
"""

from django.contrib.auth.models import Permission
from django.db.models import Q
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


def is_global_steward(user) -> bool:
    """A superuser, or an account holding the permission itself or through a group.

    One query, remembered on the user object (Django's ``has_perm`` would load
    all of the account's user and group permissions in two).
    """
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, "_claimgraph_global_steward", None)
    if cached is None:
        cached = Permission.objects.filter(
            Q(user=user) | Q(group__user=user),
            content_type__app_label=_APP_LABEL,
            codename=_CODENAME,
        ).exists()
        user._claimgraph_global_steward = cached
    return cached


def steward_scope_ids(user) -> list[int]:
    """The ids of the scopes on which ``user`` holds the object permission, itself or by group.

    Read once per user object (for a request, once per request, like Django's
    own permission cache) and handed to queries as a plain list: PostgreSQL
    plans ``scope_id = ANY(...)`` far faster than guardian's permission
    subquery, and every list page and lookup filters by it.
    """
    if not user.is_authenticated or not user.is_active:
        return []
    cached = getattr(user, "_claimgraph_steward_scope_ids", None)
    if cached is None:
        held = UserObjectPermission.objects.filter(_ON_SCOPES, user=user)
        through_groups = GroupObjectPermission.objects.filter(_ON_SCOPES, group__user=user)
        pks = held.values_list("object_pk", flat=True).union(
            through_groups.values_list("object_pk", flat=True)
        )
        cached = sorted(int(pk) for pk in pks)
        user._claimgraph_steward_scope_ids = cached
    return cached


def readable_scope_ids(user) -> list[int] | None:
    """The ids of the scopes ``user`` may read (member or steward); None means every scope.

    Cached on the user object like ``steward_scope_ids``. An inactive or
    anonymous account reads nothing.
    """
    if not user.is_authenticated or not user.is_active:
        return []
    if is_global_steward(user):
        return None
    cached = getattr(user, "_claimgraph_readable_scope_ids", None)
    if cached is None:
        members = user.member_scopes.values_list("pk", flat=True)
        cached = sorted(set(members) | set(steward_scope_ids(user)))
        user._claimgraph_readable_scope_ids = cached
    return cached


def is_steward_of(user, scope) -> bool:
    """Whether ``user`` may act as a steward in ``scope``.

    From the ids ``steward_scope_ids`` remembers on the user object, not
    guardian's ``has_perm``, which reads the permission tables again on
    every call: a page asks this of several facts and scopes.
    """
    if not user.is_authenticated or not user.is_active:
        return False
    return is_global_steward(user) or scope.pk in steward_scope_ids(user)


def is_member_of(user, scope) -> bool:
    """Whether ``user`` may read ``scope``: a member or one of its stewards."""
    if not user.is_authenticated or not user.is_active:
        return False
    return scope.members.filter(pk=user.pk).exists() or is_steward_of(user, scope)
