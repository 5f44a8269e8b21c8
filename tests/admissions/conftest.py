"""Facts and people for the admissions tests."""

import pytest
from django.contrib.auth.models import Group

from memories.store.models import Fact
from memories.store.roles import STEWARDS_GROUP
from memories.write.actions import assert_fact
from tests.conftest import make_user


def write_fact(actor, obj: str = "redis", *, scope: str = "project", now=None, **extra) -> Fact:
    """A fact asserted through the ordinary write path (system bucket unless told)."""
    data = {
        "scope": scope,
        "subject": extra.pop("subject", "AuthService"),
        "predicate": extra.pop("predicate", "core/uses"),
        "object": obj,
        "source_type": extra.pop("source_type", "code"),
        **extra,
    }
    return assert_fact(actor=actor, data=data, now=now).fact


@pytest.fixture
def system_fact(author) -> Fact:
    return write_fact(author)


@pytest.fixture
def user_fact(author) -> Fact:
    return write_fact(author, "memcached", bucket="user")


@pytest.fixture
def deactivated_steward(scope):
    """A global steward whose account was deactivated: no authority, no visibility."""
    user = make_user("dora", is_active=False)
    user.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    return user
