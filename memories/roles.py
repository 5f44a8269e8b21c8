"""Who is a steward (SPEC §6).

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
"""

STEWARD_PERMISSION = "memories.steward_scope"
STEWARDS_GROUP = "stewards"


def is_global_steward(user) -> bool:
    """A superuser, or an account holding the permission itself or through a group.

    One hand-written statement, remembered on the user object (Django's
    ``has_perm`` would load all of the account's user and group permissions
    in two queries). Every console page asks, and the ORM's version of this
    query cost more Python to build than PostgreSQL took to run it.
    """
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, "_claimgraph_global_steward", None)
    if cached is None:
        from memories.lookups import rows

        app_label, codename = STEWARD_PERMISSION.split(".")
        parameters = {"user": user.pk, "app_label": app_label, "codename": codename}
        cached = rows(_GLOBAL_STEWARD_SQL, parameters)[0][0]
        user._claimgraph_global_steward = cached
    return cached


# The permission held directly or through one of the account's groups.
_GLOBAL_STEWARD_SQL = """
SELECT EXISTS (
    SELECT 1 FROM auth_permission p
      JOIN django_content_type t ON t.id = p.content_type_id
     WHERE t.app_label = %(app_label)s AND p.codename = %(codename)s
       AND (EXISTS (SELECT 1 FROM auth_user_user_permissions up
                     WHERE up.user_id = %(user)s AND up.permission_id = p.id)
            OR EXISTS (SELECT 1 FROM auth_user_groups ug
                         JOIN auth_group_permissions gp ON gp.group_id = ug.group_id
                        WHERE ug.user_id = %(user)s AND gp.permission_id = p.id))
)
"""


def steward_scope_ids(user) -> list[int]:
    """The ids of the scopes on which ``user`` holds the object permission.

    Read once per user object (for a request, once per request, like Django's
    own permission cache) and handed to queries as a plain list: PostgreSQL
    plans ``scope_id = ANY(...)`` far faster than guardian's permission
    subquery, and every list page and lookup filters by it.
    """
    if not user.is_authenticated or not user.is_active:
        return []
    cached = getattr(user, "_claimgraph_steward_scope_ids", None)
    if cached is None:
        from guardian.shortcuts import get_objects_for_user

        from memories.models import Scope

        cached = list(
            get_objects_for_user(
                user,
                STEWARD_PERMISSION,
                klass=Scope,
                accept_global_perms=False,
                with_superuser=False,
            ).values_list("pk", flat=True)
        )
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
        from memories.models import Scope

        members = Scope.members.through.objects.filter(user_id=user.pk)
        cached = sorted(
            set(members.values_list("scope_id", flat=True)) | set(steward_scope_ids(user))
        )
        user._claimgraph_readable_scope_ids = cached
    return cached


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
