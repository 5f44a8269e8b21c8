"""What every console page needs to know about the signed-in account."""

from functools import cache, cached_property

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest
from django.urls import get_script_prefix, get_urlconf, reverse

from memories.store.roles import is_global_steward, steward_scope_ids

# The pages the navigation links to, by URL name.
NAVIGATION = (
    "dashboard",
    "conflicts",
    "candidates",
    "challenges",
    "facts",
    "entities",
    "audit",
    "changes",
    "health",
    "account",
    "logout",
)


@cache
def _navigation(script_prefix: str, urlconf: str) -> dict[str, str]:
    # Every page links to the same few pages: their paths depend only on the
    # URLconf and the prefix the site is served under, so they are reversed
    # once for each pair rather than on every request.
    return {name: reverse(name, urlconf=urlconf) for name in NAVIGATION}


class ConsoleContext:
    """Evaluated lazily: a page that never asks costs no query."""

    def __init__(self, user: User | AnonymousUser) -> None:
        self.user = user

    @cached_property
    def is_steward(self) -> bool:
        """A steward somewhere: globally, or of at least one scope (shows steward pages)."""
        if not self.user.is_authenticated or not self.user.is_active:
            return False
        return is_global_steward(self.user) or bool(steward_scope_ids(self.user))

    @cached_property
    def nav(self) -> dict[str, str]:
        """The navigation's paths by URL name (``console.nav.dashboard``)."""
        return _navigation(get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF)


def console(request: HttpRequest) -> dict[str, ConsoleContext]:
    """``console`` in every template: the account's steward standing and the navigation."""
    return {"console": ConsoleContext(request.user)}
