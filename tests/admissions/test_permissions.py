"""Who may do what (SPEC §6): every operation against every kind of caller.

Outside the caller's scopes everything answers exactly as a missing row does;
inside, a member attempting a steward action is refused as "not yours".
"""

import uuid

import pytest
from django.contrib.auth.models import AnonymousUser
from guardian.shortcuts import assign_perm

from admissions.actions import correct_fact, file_challenge, record_verdict, refute_challenge
from admissions.models import Record
from memories.store.errors import Forbidden, NotFound
from memories.store.roles import STEWARD_PERMISSION
from tests.admissions.conftest import write_fact
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

OK = "ok"

CALLERS = [
    "anonymous",
    "member",
    "outsider",
    "author",
    "scope_steward",
    "steward",
    "deactivated_steward",
]

#                     anonymous  member     outsider  author     scope st. steward  deactivated
EXPECTED = {
    "record_verdict": [NotFound, Forbidden, NotFound, Forbidden, OK, OK, NotFound],
    "file_challenge": [NotFound, OK, NotFound, OK, OK, OK, NotFound],
    "refute_challenge": [NotFound, Forbidden, NotFound, Forbidden, OK, OK, NotFound],
    "correct_fact": [NotFound, Forbidden, NotFound, OK, OK, OK, NotFound],
}


def operate(operation: str, actor, fact_id, challenge_id):
    if operation == "record_verdict":
        return record_verdict(actor=actor, fact_id=fact_id, verdict="admitted", ground="ok")
    if operation == "file_challenge":
        return file_challenge(actor=actor, fact_id=fact_id, ground="wrong", evidence=["t-1"])
    if operation == "refute_challenge":
        return refute_challenge(actor=actor, challenge_id=challenge_id, ground="checked")
    return correct_fact(actor=actor, fact_id=fact_id, changes={"object": "valkey"}, ground="fix")


@pytest.fixture
def target(author, scope):
    """A system fact by ``author`` with one open challenge, by a member none of the callers
    is: a caller's own open challenge would refuse its second (issue 30 item 7)."""
    fact = write_fact(author)
    other = make_user("olga")
    scope.members.add(other)
    challenge = file_challenge(actor=other, fact_id=fact.pk, ground="wrong", evidence=["t-1"])
    return fact, challenge


@pytest.mark.parametrize(
    ("operation", "caller", "expected"),
    [
        (operation, caller, outcome)
        for operation, outcomes in EXPECTED.items()
        for caller, outcome in zip(CALLERS, outcomes, strict=True)
    ],
)
def test_permission_matrix(request, target, operation, caller, expected):
    actor = AnonymousUser() if caller == "anonymous" else request.getfixturevalue(caller)
    fact, challenge = target
    records_before = Record.objects.count()
    if expected is OK:
        operate(operation, actor, fact.pk, challenge.pk)
        return
    with pytest.raises(expected):
        operate(operation, actor, fact.pk, challenge.pk)
    assert Record.objects.count() == records_before


@pytest.mark.parametrize("operation", list(EXPECTED))
@pytest.mark.parametrize("caller", ["outsider", "anonymous", "deactivated_steward"])
def test_not_found_and_not_yours_are_indistinguishable(request, target, operation, caller):
    actor = AnonymousUser() if caller == "anonymous" else request.getfixturevalue(caller)
    fact, challenge = target
    with pytest.raises(NotFound) as existing:
        operate(operation, actor, fact.pk, challenge.pk)
    with pytest.raises(NotFound) as missing:
        operate(operation, actor, uuid.uuid4(), uuid.uuid4())
    assert str(existing.value) == str(missing.value)
    assert existing.value.args == missing.value.args


def test_a_steward_of_another_scope_is_an_outsider_here(target, other_scope):
    elsewhere = make_user("eli")
    assign_perm(STEWARD_PERMISSION, elsewhere, other_scope)
    fact, challenge = target
    for operation in EXPECTED:
        with pytest.raises(NotFound):
            operate(operation, elsewhere, fact.pk, challenge.pk)


def test_a_member_of_the_scope_sees_nobody_elses_user_fact(author, member):
    private = write_fact(author, "memcached", bucket="user")
    with pytest.raises(NotFound):
        file_challenge(actor=member, fact_id=private.pk, ground="no", evidence=None)
