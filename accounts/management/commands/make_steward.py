"""``make_steward USERNAME [--scope SCOPE] [--revoke]``: stewardship everywhere, or on one scope."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memories.management.commands._accounts import SHELL_ACCOUNT, acting_account
from memories.store.models import Scope
from memories.write.stewardship import make_steward, revoke_steward


class Command(BaseCommand):
    help = (
        "Make an account a steward of every scope, or (with --scope) of one scope; "
        f"--revoke takes it away. Every change is an audit entry, by {SHELL_ACCOUNT}."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--scope", help="Only this scope (it must exist).")
        parser.add_argument("--revoke", action="store_true", help="Take stewardship away.")

    def handle(self, *args, username: str, scope: str | None, revoke: bool, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(
                f"There is no account named {username!r} (`issue_token {username}` creates one)."
            )
        target = None
        if scope is not None:
            target = Scope.objects.filter(name=scope).first()
            if target is None:
                raise CommandError(f"There is no scope named {scope!r}.")
        # The operator at the shell acts as a person does (no rule decided
        # it): the entry names the shell's own account as its actor.
        action = revoke_steward if revoke else make_steward
        action(actor=None, user=user, scope=target, shell_account=acting_account(None))
        where = "every scope" if scope is None else scope
        if revoke:
            self.stdout.write(f"{username} is no longer a steward of {where}.")
        else:
            self.stdout.write(f"{username} is now a steward of {where}.")
