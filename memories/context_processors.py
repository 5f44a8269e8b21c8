"""What every console page needs to know about the signed-in account."""

from functools import cached_property

from django.http import HttpRequest

from memories.roles import is_global_steward, steward_scope_ids


class ConsoleContext:
    """Evaluated lazily: a page that never asks costs no query."""

    def __init__(self, user) -> None:
        self.user = user

    @cached_property
    def is_steward(self) -> bool:
        """A steward somewhere: globally, or of at least one scope (shows steward pages)."""
        if not self.user.is_authenticated or not self.user.is_active:
            return False
        return is_global_steward(self.user) or bool(steward_scope_ids(self.user))


def console(request: HttpRequest) -> dict[str, ConsoleContext]:
    return {"console": ConsoleContext(request.user)}
