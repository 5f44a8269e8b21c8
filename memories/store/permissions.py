"""Who may end a fact and who may rule on a conflict (SPEC §3, §6).

Asked by the actions before they act, by the judge before it resolves, and
by the console to offer only the buttons that would work.
"""

from django.contrib.auth.models import User

from memories.store.models import Bucket, Conflict, Fact
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
