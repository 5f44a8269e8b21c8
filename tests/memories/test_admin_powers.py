"""Admin powers (issue 29 §5, §6): who may grant stewardship, what the admin may change."""

from io import StringIO

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.db.models import Q
from django.urls import reverse
from guardian.shortcuts import assign_perm, remove_perm

from memories.management.commands._accounts import SHELL_ACCOUNT, SHELL_ACCOUNT_RULE
from memories.store.errors import Forbidden
from memories.store.models import AuditEntry
from memories.store.roles import STEWARD_PERMISSION, STEWARDS_GROUP, is_steward_of
from memories.write.stewardship import make_steward, revoke_steward
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def _scope_staff():
    """Admin staff holding only change_scope (and view_scope) on scopes."""
    user = make_user("clerk", is_staff=True)
    for codename in ("change_scope", "view_scope"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


def _steward_entries(scope):
    return AuditEntry.objects.filter(
        scope=scope, action__in=["made-steward", "revoked-steward"]
    ).order_by("id")


def test_staff_with_only_change_scope_cannot_grant_themselves_stewardship(client, scope):
    clerk = _scope_staff()
    client.force_login(clerk)
    url = reverse("admin:memories_scope_permissions_manage_user", args=[scope.pk, clerk.pk])
    answer = client.post(url, {"permissions": ["steward_scope"]})
    assert answer.status_code == 403
    page = reverse("admin:memories_scope_permissions", args=[scope.pk])
    assert client.get(page).status_code == 403
    clerk = type(clerk).objects.get(pk=clerk.pk)
    assert not is_steward_of(clerk, scope)
    assert not _steward_entries(scope).exists()


def test_a_superuser_grants_and_revokes_through_the_admin_with_audit_entries(client, scope):
    root = make_user("root", is_staff=True, is_superuser=True)
    mira = make_user("mira")
    client.force_login(root)
    url = reverse("admin:memories_scope_permissions_manage_user", args=[scope.pk, mira.pk])
    assert client.post(url, {"permissions": ["steward_scope"]}).status_code == 302
    assert client.post(url, {"permissions": ["view_scope"]}).status_code == 302
    entries = list(_steward_entries(scope))
    assert [(e.action, e.actor_id) for e in entries] == [
        ("made-steward", root.pk),
        ("revoked-steward", root.pk),
    ]
    assert entries[0].after == {"steward": "mira"}


def test_only_a_superuser_or_the_shell_may_use_the_action(scope, steward):
    mira = make_user("mira")
    with pytest.raises(Forbidden):
        make_steward(actor=steward, user=mira, scope=scope)
    root = make_user("root", is_superuser=True)
    make_steward(actor=root, user=mira, scope=scope)
    revoke_steward(actor=None, user=mira, scope=scope, rule="management command make_steward")
    entries = _steward_entries(scope).filter(Q(after__steward="mira") | Q(before__steward="mira"))
    assert [(e.action, e.actor_id, e.rule) for e in entries] == [
        ("made-steward", root.pk, ""),
        ("revoked-steward", None, "management command make_steward"),
    ]


def test_every_grant_and_revoke_from_anywhere_is_an_audit_entry(scope, other_scope):
    mira = make_user("mira")
    # guardian directly, as any code or page might
    assign_perm(STEWARD_PERMISSION, mira, scope)
    remove_perm(STEWARD_PERMISSION, mira, scope)
    # the stewards group, as the Django admin's user page does
    mira.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    mira.groups.remove(Group.objects.get(name=STEWARDS_GROUP))
    # the management command, both ways, globally
    call_command("make_steward", "mira", stdout=StringIO())
    call_command("make_steward", "mira", "--revoke", stdout=StringIO())
    actions = [e.action for e in _steward_entries(scope).exclude(after__steward=SHELL_ACCOUNT)]
    assert actions == ["made-steward", "revoked-steward"] * 3
    # a grant on every scope is in every scope's feed
    elsewhere = [
        e.action for e in _steward_entries(other_scope).exclude(after__steward=SHELL_ACCOUNT)
    ]
    assert elsewhere == ["made-steward", "revoked-steward"] * 2
    outside = _steward_entries(scope).first()
    assert outside.actor is None and outside.rule == "granted outside the stewardship action"
    # The operator's command acts as the shell's own account, itself made a steward once.
    by_the_shell = _steward_entries(scope).filter(after__steward="mira", actor__isnull=False)
    assert {(e.actor.username, e.rule) for e in by_the_shell} == {(SHELL_ACCOUNT, "")}
    shells = _steward_entries(scope).filter(after__steward=SHELL_ACCOUNT)
    assert [(e.actor, e.rule) for e in shells] == [(None, SHELL_ACCOUNT_RULE)]


def test_an_entitys_scope_and_name_are_read_only_in_the_admin(client, scope, other_scope, member):
    from memories.write.actions import assert_fact

    fact = assert_fact(
        actor=member,
        data={
            "scope": "project",
            "subject": "AuthService",
            "predicate": "core/has-version",
            "object": "2.0.0",
            "source_type": "code",
        },
    ).fact
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    url = reverse("admin:memories_entity_change", args=[fact.subject_id])
    answer = client.post(
        url, {"scope": other_scope.pk, "name": "Renamed", "type": "service", "aliases": ""}
    )
    assert answer.status_code == 302
    entity = type(fact.subject).objects.get(pk=fact.subject_id)
    assert (entity.scope_id, entity.name, entity.type) == (scope.pk, "AuthService", "service")


def test_admin_grants_and_revokes_leave_admin_history_entries(client, scope):
    from django.contrib.admin.models import CHANGE, LogEntry

    root = make_user("root", is_staff=True, is_superuser=True)
    mira = make_user("mira")
    client.force_login(root)
    user_url = reverse("admin:memories_scope_permissions_manage_user", args=[scope.pk, mira.pk])
    assert client.post(user_url, {"permissions": ["steward_scope"]}).status_code == 302
    assert client.post(user_url, {"permissions": ["view_scope"]}).status_code == 302
    crew = Group.objects.create(name="crew")
    group_url = reverse("admin:memories_scope_permissions_manage_group", args=[scope.pk, crew.pk])
    assert client.post(group_url, {"permissions": ["steward_scope"]}).status_code == 302
    entries = list(LogEntry.objects.filter(object_id=str(scope.pk)).order_by("id"))
    assert [(e.user_id, e.action_flag) for e in entries] == [(root.pk, CHANGE)] * 4
    assert [e.get_change_message() for e in entries] == [
        "Granted steward_scope to mira.",
        "Granted view_scope to mira.",
        "Revoked steward_scope from mira.",
        "Granted steward_scope to group crew.",
    ]
