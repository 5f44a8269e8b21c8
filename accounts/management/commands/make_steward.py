"""``make_steward USERNAME [--scope SCOPE]``: stewardship everywhere, or on one scope."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone
from guardian.shortcuts import assign_perm

from memories.store.audit import record_audit
from memories.store.models import Scope
from memories.store.roles import STEWARD_PERMISSION, STEWARDS_GROUP


class Command(BaseCommand):
    help = "Make an account a steward of every scope, or (with --scope) of one scope."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--scope", help="Only this scope (it must exist).")

    def handle(self, *args, username: str, scope: str | None, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(
                f"There is no account named {username!r} (`issue_token {username}` creates one)."
            )
        if scope is None:
            user.groups.add(Group.objects.get(name=STEWARDS_GROUP))
            self.stdout.write(f"{username} is now a steward of every scope.")
            return
        target = Scope.objects.filter(name=scope).first()
        if target is None:
            raise CommandError(f"There is no scope named {scope!r}.")
        with transaction.atomic():
            assign_perm(STEWARD_PERMISSION, user, target)
            # The operator at the shell has no account: the entry names the
            # command as its rule instead of an actor.
            record_audit(
                at=timezone.now(),
                actor=None,
                scope_id=target.pk,
                action="made-steward",
                target=target,
                after={"steward": username},
                rule="management command make_steward",
            )
        self.stdout.write(f"{username} is now a steward of {scope}.")
