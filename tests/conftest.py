"""Fixed characters for the tests: a steward, a member, an outsider who must see nothing.

Every test that touches data runs on the real PostgreSQL (embedded by
default, or the server named by DATABASE_URL).
"""

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Group, User
from guardian.shortcuts import assign_perm

from memories.store.models import Scope
from memories.store.roles import STEWARD_PERMISSION, STEWARDS_GROUP
from memories.store.vocabulary import forget_vocabulary


def at(text: str) -> datetime:
    """A UTC time from a short ISO string, for readable tests."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> None:
    """Let the test runner's flush empty the append-only admission records.

    PostgreSQL refuses TRUNCATE on ``admissions_record`` unless the session
    sets ``claimgraph.allow_truncate`` (admissions/sql/append_only.sql). Django
    empties the database between transactional tests with one TRUNCATE over
    every table, so the *test* database, and only it, gets the setting as a
    database default. The connection is closed so the next one picks it up.
    """
    from django.db import connection

    with django_db_blocker.unblock():
        with connection.cursor() as cursor:
            name = connection.ops.quote_name(connection.settings_dict["NAME"])
            cursor.execute(f"ALTER DATABASE {name} SET claimgraph.allow_truncate = 'on'")
        connection.close()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings) -> None:
    # The default hasher is deliberately slow; tests create many accounts.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_vocabulary() -> None:
    # Each test database starts from the migrations; never reuse a copy of
    # the vocabulary read in an earlier test.
    forget_vocabulary()


@pytest.fixture(autouse=True)
def members_claim_every_source(request, monkeypatch) -> None:
    """The suite's scopes let members claim every source type, as before issue 29 item 8.

    Most tests write ``code`` or ``decision-record`` as members to set up a
    slot; which role may claim which source is held by
    tests/api/test_source_roles.py, whose scopes keep the real defaults
    (``REAL_SOURCE_ROLES = True``). Patched where Django reads a field's
    default, so every scope the ORM creates in a test gets it.
    """
    if getattr(request.module, "REAL_SOURCE_ROLES", False):
        return
    field = Scope._meta.get_field("member_source_types")
    monkeypatch.setattr(field, "_get_default", lambda: None)


@pytest.fixture
def scope(db) -> Scope:
    return Scope.objects.create(name="project")


@pytest.fixture
def other_scope(db) -> Scope:
    return Scope.objects.create(name="elsewhere")


def make_user(username: str, **extra) -> User:
    return User.objects.create_user(username=username, password="a-long-test-password", **extra)


@pytest.fixture
def member(scope) -> User:
    user = make_user("mira")
    scope.members.add(user)
    return user


@pytest.fixture
def author(scope) -> User:
    user = make_user("arlo")
    scope.members.add(user)
    return user


@pytest.fixture
def steward(scope) -> User:
    """A global steward: a member of the stewards group."""
    user = make_user("stella")
    user.groups.add(Group.objects.get(name=STEWARDS_GROUP))
    return user


@pytest.fixture
def scope_steward(scope) -> User:
    """A steward of ``scope`` only, through a guardian object permission."""
    user = make_user("sasha")
    assign_perm(STEWARD_PERMISSION, user, scope)
    return user


@pytest.fixture
def outsider(other_scope) -> User:
    """A member of another scope: must see nothing of ``scope``."""
    user = make_user("otto")
    other_scope.members.add(user)
    return user
