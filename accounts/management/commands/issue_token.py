"""``issue_token USERNAME``: a new API token, printed once as the last word of the output."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.actions import issue_token
from memories.store.errors import Rejected, StateConflict


class Command(BaseCommand):
    help = (
        "Issue an API token for an account, creating the account (without a password) "
        "if it does not exist. The token is printed once, as the last word of the output."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--name", default="issued from the command line", help="What the token is for."
        )

    def handle(self, *args, username: str, name: str, **options) -> None:
        User = get_user_model()
        with transaction.atomic():
            user, created = User.objects.get_or_create(username=username)
            if created:
                # A password-less account: it acts through its tokens until an
                # admin sets a password (`manage.py changepassword`).
                user.set_unusable_password()
                user.save(update_fields=["password"])
            elif not user.is_active:
                raise CommandError(f"The account {username!r} is deactivated.")
            try:
                _token, secret = issue_token(actor=user, name=name)
            except Rejected as refused:
                raise CommandError(f"{refused.field}: {refused.message}") from None
            except StateConflict as refused:
                raise CommandError(f"No token issued for {username}: {refused}.") from None
        if created:
            self.stdout.write(f"Created the account {username!r}.")
        self.stdout.write(f"API token for {username} (shown once, keep it secret): {secret}")
