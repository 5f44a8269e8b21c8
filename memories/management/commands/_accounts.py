"""Who a management command acts as."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import CommandError

from memories.store.roles import STEWARDS_GROUP
from memories.store.stewardship import acting

# The account shell commands act as when no --as is given. Whoever runs
# manage.py can already read and write the database directly, so this
# account is a global steward; it has no password and no token, so it can
# act only from the shell, and it makes such writes easy to find.
SHELL_ACCOUNT = "claimgraph-shell"
SHELL_ACCOUNT_RULE = "the shell's own account, created on first use"


def acting_account(username: str | None):
    """The named active account, or the shell's own account when none is named."""
    User = get_user_model()
    if username is not None:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"There is no account named {username!r}.")
        if not user.is_active:
            raise CommandError(f"The account {username!r} is deactivated.")
        return user
    user, created = User.objects.get_or_create(username=SHELL_ACCOUNT)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
        # Its own stewardship is an audit entry like any other, with the rule that made it.
        with acting(actor=None, rule=SHELL_ACCOUNT_RULE):
            user.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    return user
