"""Every grant and revoke of stewardship is an audit entry (SPEC §6, §12).

Stewardship lives in permission tables that more than one door writes:
``make_steward``, the audited action (``memories.write.stewardship``), the
Django admin's user and group pages and guardian's object-permission pages.
So the audit entry is written here, once, by signal handlers on those
tables, whichever door was used: a grant made without the action still
leaves an entry (with no actor, and a rule saying it came from outside the
action). The action says who acted and why through :func:`acting`.

A grant on one scope is an entry in that scope's feed; a grant on every
scope (the stewards group, or the permission held globally) is an entry in
every scope's feed, so each scope's stewards can see who may rule on it.
A restore (``restore_export``) re-creates grants whose history its audit
entries already carry: it runs under :func:`unaudited`.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.utils import timezone
from guardian.models import GroupObjectPermission, UserObjectPermission

from memories.store.audit import record_audit
from memories.store.models import Scope
from memories.store.roles import STEWARD_PERMISSION

_APP_LABEL, _CODENAME = STEWARD_PERMISSION.split(".")
OUTSIDE_THE_ACTION = "granted outside the stewardship action"


@dataclass(frozen=True)
class _Acting:
    actor: object | None
    rule: str
    reason: str = ""
    audited: bool = True


_acting: ContextVar[_Acting | None] = ContextVar("claimgraph_stewardship_acting", default=None)


@contextmanager
def acting(*, actor, rule: str = "", reason: str = "") -> Iterator[None]:
    """Grants and revokes made inside are credited to ``actor`` (None: the operator's shell)."""
    token = _acting.set(_Acting(actor=actor, rule=rule, reason=reason))
    try:
        yield
    finally:
        _acting.reset(token)


@contextmanager
def unaudited() -> Iterator[None]:
    """For a restore only: the grants it re-creates come with their own audit entries."""
    token = _acting.set(_Acting(actor=None, rule="", audited=False))
    try:
        yield
    finally:
        _acting.reset(token)


def _record(*, scope_ids, granted: bool, steward: str, every_scope: bool = False) -> None:
    context = _acting.get() or _Acting(actor=None, rule=OUTSIDE_THE_ACTION)
    if not context.audited:
        return
    now = timezone.now()
    state = {"steward": steward, **({"every_scope": True} if every_scope else {})}
    for scope in Scope.objects.filter(pk__in=list(scope_ids)).order_by("pk"):
        record_audit(
            at=now,
            actor=context.actor,
            scope_id=scope.pk,
            action="made-steward" if granted else "revoked-steward",
            target=scope,
            before=None if granted else state,
            after=state if granted else None,
            reason=context.reason,
            rule=context.rule,
        )


def _is_steward_permission(permission_id: int) -> bool:
    return Permission.objects.filter(
        pk=permission_id, codename=_CODENAME, content_type__app_label=_APP_LABEL
    ).exists()


def _object_permission_changed(sender, instance, granted: bool) -> None:
    if instance.content_type.model_class() is not Scope:
        return
    if not _is_steward_permission(instance.permission_id):
        return
    if sender is UserObjectPermission:
        steward = instance.user.username
    else:
        steward = f"group {instance.group.name}"
    _record(scope_ids=[int(instance.object_pk)], granted=granted, steward=steward)


def _on_object_permission_saved(sender, instance, created, raw=False, **kwargs) -> None:
    if created and not raw:
        _object_permission_changed(sender, instance, granted=True)


def _on_object_permission_deleted(sender, instance, **kwargs) -> None:
    _object_permission_changed(sender, instance, granted=False)


def _every_scope(*, granted: bool, steward: str) -> None:
    _record(
        scope_ids=Scope.objects.values_list("pk", flat=True),
        granted=granted,
        steward=steward,
        every_scope=True,
    )


def _on_groups_changed(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    """A user joins or leaves a group holding the permission: steward of every scope."""
    if action not in ("post_add", "post_remove", "pre_clear"):
        return
    granted = action == "post_add"
    User = get_user_model()
    if action == "pre_clear":
        if reverse:
            pairs = [(instance, user) for user in instance.user_set.all()]
        else:
            pairs = [(group, instance) for group in instance.groups.all()]
    elif reverse:
        pairs = [(instance, user) for user in User.objects.filter(pk__in=pk_set)]
    else:
        pairs = [(group, instance) for group in Group.objects.filter(pk__in=pk_set)]
    for group, user in pairs:
        if group.permissions.filter(codename=_CODENAME, content_type__app_label=_APP_LABEL):
            _every_scope(granted=granted, steward=user.username)


def _on_permissions_changed(sender, instance, action, reverse, pk_set, model, **kwargs) -> None:
    """The global permission given to (or taken from) a user or a group directly."""
    if action not in ("post_add", "post_remove") or reverse:
        return
    if not Permission.objects.filter(
        pk__in=pk_set, codename=_CODENAME, content_type__app_label=_APP_LABEL
    ).exists():
        return
    steward = f"group {instance.name}" if isinstance(instance, Group) else instance.username
    _every_scope(granted=action == "post_add", steward=steward)


def connect() -> None:
    """Called once, from ``MemoriesConfig.ready``."""
    User = get_user_model()
    for model in (UserObjectPermission, GroupObjectPermission):
        post_save.connect(
            _on_object_permission_saved, sender=model, dispatch_uid=f"steward-{model}"
        )
        post_delete.connect(
            _on_object_permission_deleted, sender=model, dispatch_uid=f"steward-del-{model}"
        )
    m2m_changed.connect(
        _on_groups_changed, sender=User.groups.through, dispatch_uid="steward-groups"
    )
    m2m_changed.connect(
        _on_permissions_changed,
        sender=User.user_permissions.through,
        dispatch_uid="steward-user-permissions",
    )
    m2m_changed.connect(
        _on_permissions_changed,
        sender=Group.permissions.through,
        dispatch_uid="steward-group-permissions",
    )
