"""Granting and revoking stewardship: the audited action (SPEC §6).

Only a superuser, or the operator at the shell (``make_steward``, which
passes no actor), grants or revokes stewardship. The audit entry is written
by ``memories.store.stewardship`` for every change of the permission tables,
whichever door made it; this action names who acted: the superuser, or for
the operator the account the shell acts as (``shell_account``), so that the
entry reads as the person's action it is, not as an automatic change.
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


def make_steward(
    *,
    actor: User | None,
    user: User,
    scope: Scope | None,
    rule: str = "",
    shell_account: User | None = None,
) -> None:
    """Make ``user`` a steward of ``scope``, or of every scope when ``scope`` is None.

    With no ``actor`` (the operator at the shell), ``shell_account`` is the
    account the entry names.
    """
    _change(actor=actor, user=user, scope=scope, rule=rule, grant=True, shell=shell_account)


def revoke_steward(
    *,
    actor: User | None,
    user: User,
    scope: Scope | None,
    rule: str = "",
    shell_account: User | None = None,
) -> None:
    """Take ``user``'s stewardship of ``scope`` (None: the stewards group) away."""
    _change(actor=actor, user=user, scope=scope, rule=rule, grant=False, shell=shell_account)


def _change(*, actor, user, scope, rule: str, grant: bool, shell: User | None) -> None:
    if not may_grant_stewardship(actor):
        raise Forbidden("only a superuser may grant or revoke stewardship")
    credited = actor if actor is not None else shell
    with transaction.atomic(), acting(actor=credited, rule=rule):
        if scope is None:
            group = Group.objects.get(name=STEWARDS_GROUP)
            (user.groups.add if grant else user.groups.remove)(group)
        elif grant:
            assign_perm(STEWARD_PERMISSION, user, scope)
        else:
            remove_perm(STEWARD_PERMISSION, user, scope)
