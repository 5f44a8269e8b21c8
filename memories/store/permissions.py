"""Who may end a fact and who may rule on a conflict (SPEC §3, §6).

Asked by the actions before they act, by the judge before it resolves, and
by the console to offer only the buttons that would work.
"""

from django.contrib.auth.models import User

from memories.store.errors import SourceTypeNotAllowed
from memories.store.models import Bucket, Conflict, Fact, Scope
from memories.store.roles import is_steward_of


def may_end(actor: User, fact: Fact) -> bool:
    """The fact's author or a steward of its scope may invalidate or correct it."""
    return bool(actor.is_active and fact.author_id == actor.pk) or is_steward_of(actor, fact.scope)


def may_resolve(actor: User, conflict: Conflict) -> bool:
    """Stewards of the scope; for a conflict among ``user`` facts, also their author."""
    if is_steward_of(actor, conflict.scope):
        return True
    authors = {
        (bucket, author)
        for bucket, author in conflict.members.values_list("fact__bucket", "fact__author_id")
    }
    return authors == {(Bucket.USER, actor.pk)}


def claimable_source_types(actor: User, scope: Scope) -> tuple[str, ...] | None:
    """The source types ``actor`` may claim writing in ``scope``; None for every one.

    Part of the account's role (issue 29 item 8): a source type says how
    much a fact is trusted, so it is not the writer's to choose freely. A
    steward of the scope claims the scope's steward list, anyone else who
    may write it the member list; an admin sets both on the scope.
    """
    if is_steward_of(actor, scope):
        allowed = scope.steward_source_types
    else:
        allowed = scope.member_source_types
    # Null or empty (the admin's blank field): every source type.
    return tuple(allowed) if allowed else None


def check_source_type(actor: User, scope: Scope, source_type: str) -> None:
    """Refuse (403, naming what the account may claim) a source type outside its role."""
    allowed = claimable_source_types(actor, scope)
    if allowed is not None and source_type not in allowed:
        raise SourceTypeNotAllowed(source_type, allowed)
