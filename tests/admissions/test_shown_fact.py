"""``shown_fact``'s one statement answers as its ORM twin: who may read, the rows, the status.

The twin is the API's read before it: ``readable_fact`` (``Fact.objects.readable_by``
with ``for_display``), ``fact_statuses`` and ``Fact.objects.disputed``.
"""

import pytest
from django.contrib.auth.models import User

from admissions.actions import file_challenge, record_verdict
from admissions.selectors import fact_statuses, shown_fact
from memories.store.errors import NotFound
from memories.store.lookups import readable_fact
from memories.store.models import FACT_DISPLAY_RELATIONS, Fact
from memories.write.actions import assert_fact
from tests.admissions.conftest import write_fact

pytestmark = pytest.mark.django_db

READERS = ("member", "author", "steward", "scope_steward", "outsider", "deactivated_steward")


def twin(actor: User, fact_id):
    """The ORM reads ``shown_fact`` stands for, or None where they answer NotFound."""
    try:
        fact = readable_fact(actor, fact_id)
    except NotFound:
        return None
    status = fact_statuses([fact]).get(fact.pk)
    disputed = Fact.objects.filter(pk=fact.pk).disputed().exists()
    return fact, status, disputed


def same_fact(found: Fact, expected: Fact) -> None:
    fields = [field.attname for field in Fact._meta.concrete_fields]
    assert [getattr(found, name) for name in fields] == [getattr(expected, name) for name in fields]
    for name in FACT_DISPLAY_RELATIONS:
        related, wanted = getattr(found, name), getattr(expected, name)
        if wanted is None:
            assert related is None
            continue
        columns = [field.attname for field in type(wanted)._meta.concrete_fields]
        assert [getattr(related, c) for c in columns] == [getattr(wanted, c) for c in columns]


@pytest.fixture
def facts(author, member, steward, scope) -> list[Fact]:
    """An admitted fact challenged with evidence, a candidate, a disputed note,
    private facts of two accounts, and a fact whose object is an entity."""
    admitted = write_fact(author, "redis")
    record_verdict(actor=steward, fact_id=admitted.pk, verdict="admitted", ground="read it")
    file_challenge(actor=member, fact_id=admitted.pk, ground="gone", evidence=["pr-9"])
    candidate = write_fact(author, "kafka", evidence=[{"ref": "a", "quote": "b"}])
    standing = write_fact(author, "2.0.0", predicate="core/has-version", confidence=0.95)
    note = assert_fact(
        actor=member,
        data={
            "scope": "project",
            "subject": "AuthService",
            "predicate": "core/has-version",
            "object": "3.0.0",
            "source_type": "agent-note",
        },
    )
    assert note.status == "flagged"
    private = write_fact(author, "memcached", bucket="user")
    others_private = write_fact(member, "etcd", bucket="user")
    entity = write_fact(author, "Billing", predicate="core/depends-on", object_kind="entity")
    return [admitted, candidate, standing, note.fact, private, others_private, entity]


@pytest.mark.parametrize("reader", READERS)
def test_shown_fact_answers_as_its_orm_twin_for_every_reader(request, facts, reader):
    actor = User.objects.get(pk=request.getfixturevalue(reader).pk)
    for fact in facts:
        expected = twin(User.objects.get(pk=actor.pk), fact.pk)
        if expected is None:
            with pytest.raises(NotFound):
                shown_fact(actor, fact.pk)
            continue
        found = shown_fact(User.objects.get(pk=actor.pk), fact.pk)
        expected_fact, expected_status, expected_disputed = expected
        same_fact(found.fact, expected_fact)
        assert found.status == expected_status
        assert found.disputed == expected_disputed


def test_a_missing_or_malformed_id_is_not_found(member):
    with pytest.raises(NotFound):
        shown_fact(member, "not-a-uuid")
    with pytest.raises(NotFound):
        shown_fact(member, "00000000-0000-0000-0000-000000000000")
