"""``grant_scope USERNAME SCOPE``: membership of a scope, created if missing."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction
from django.utils import timezone

from memories.management.commands._accounts import SHELL_ACCOUNT, acting_account
from memories.store.audit import record_audit
from memories.store.models import Scope


class Command(BaseCommand):
    help = (
        "Make an account a member of a scope; the scope is created if it does not exist. "
        f"The audit entry names {SHELL_ACCOUNT} as who acted."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("scope")

    def handle(self, *args, username: str, scope: str, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(
                f"There is no account named {username!r} (`issue_token {username}` creates one)."
            )
        field = Scope._meta.get_field("name")
        try:
            field.clean(scope, None)
        except ValidationError as error:
            reasons = " ".join(error.messages)
            raise CommandError(f"{scope!r} is not a valid scope name: {reasons}") from None
        # The operator's action, a person's (no rule decided it): the entry
        # names the shell's own account, as every shell command's writes do.
        operator = acting_account(None)
        try:
            with transaction.atomic():
                target, created = Scope.objects.get_or_create(name=scope)
                target.members.add(user)
                record_audit(
                    at=timezone.now(),
                    actor=operator,
                    scope_id=target.pk,
                    action="granted-scope",
                    target=target,
                    after={"member": username, "scope_created": created},
                )
        except IntegrityError as error:
            raise CommandError(str(error)) from None
        if created:
            self.stdout.write(f"Created the scope {scope!r}.")
        self.stdout.write(f"{username} is now a member of {scope}.")
