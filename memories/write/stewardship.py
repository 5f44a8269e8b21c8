"""Granting and revoking stewardship: the audited action (SPEC §6).

Only a superuser, or the operator at the shell (``make_steward``, which
passes no actor), grants or revokes stewardship. The audit entry is written
by ``memories.store.stewardship`` for every change of the permission tables,
whichever door made it; this action names who acted.
"""

from django.contrib.auth.models import Group, User
from django.db import transaction
from guardian.shortcuts import assign_perm, remove_perm

from memories.store.errors import Forbidden
from memories.store.models import Scope
from memories.store.roles import STEWARD_PERMISSION, STEWARDS_GROUP
from memories.store.stewardship import acting


def may_grant_stewardship(actor: User | None) -> bool:
    """Only a superuser (or the operator's shell, with no account) grants stewardship."""
    return actor is None or (actor.is_active and actor.is_superuser)


def make_steward(*, actor: User | None, user: User, scope: Scope | None, rule: str = "") -> None:
    """Make ``user`` a steward of ``scope``, or of every scope when ``scope`` is None."""
    _change(actor=actor, user=user, scope=scope, rule=rule, grant=True)


def revoke_steward(*, actor: User | None, user: User, scope: Scope | None, rule: str = "") -> None:
    """Take ``user``'s stewardship of ``scope`` (None: the stewards group) away."""
    _change(actor=actor, user=user, scope=scope, rule=rule, grant=False)


def _change(*, actor, user, scope, rule: str, grant: bool) -> None:
    if not may_grant_stewardship(actor):
        raise Forbidden("only a superuser may grant or revoke stewardship")
    with transaction.atomic(), acting(actor=actor, rule=rule):
        if scope is None:
            group = Group.objects.get(name=STEWARDS_GROUP)
            (user.groups.add if grant else user.groups.remove)(group)
        elif grant:
            assign_perm(STEWARD_PERMISSION, user, scope)
        else:
            remove_perm(STEWARD_PERMISSION, user, scope)
