"""Who is a steward (SPEC §6).

A steward is an *active* account holding ``memories.steward_scope`` either
globally (through a group, usually "stewards") or on one scope as a
django-guardian object permission. Roles are only ever read from these
permission tables, never from anything a request says about itself.

guardian's ``user.has_perm(perm, obj)`` answers False for a user holding only
the global permission, so both checks are made explicitly.
"""

from django.db.models import QuerySet

STEWARD_PERMISSION = "memories.steward_scope"
STEWARDS_GROUP = "stewards"


def is_global_steward(user) -> bool:
    return bool(user.is_authenticated and user.is_active and user.has_perm(STEWARD_PERMISSION))


def steward_scope_ids(user) -> QuerySet:
    """The ids of the scopes on which ``user`` holds the object permission (a subquery)."""
    from guardian.shortcuts import get_objects_for_user

    from memories.models import Scope

    if not user.is_authenticated or not user.is_active:
        return Scope.objects.none().values("pk")
    return get_objects_for_user(
        user,
        STEWARD_PERMISSION,
        klass=Scope,
        accept_global_perms=False,
        with_superuser=False,
    ).values("pk")


def is_steward_of(user, scope) -> bool:
    """Whether ``user`` may act as a steward in ``scope``."""
    if not user.is_authenticated or not user.is_active:
        return False
    return is_global_steward(user) or user.has_perm(STEWARD_PERMISSION, scope)


def is_member_of(user, scope) -> bool:
    """Whether ``user`` may read ``scope``: a member or one of its stewards."""
    if not user.is_authenticated or not user.is_active:
        return False
    return scope.members.filter(pk=user.pk).exists() or is_steward_of(user, scope)
