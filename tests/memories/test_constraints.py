"""What must never happen is refused by PostgreSQL itself, whatever the Python code does."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memories.store.models import Conflict, Entity, Fact
from memories.write.actions import assert_fact

pytestmark = pytest.mark.django_db


@pytest.fixture
def fact(member) -> Fact:
    return assert_fact(
        actor=member,
        data={
            "scope": "project",
            "subject": "AuthService",
            "predicate": "core/has-version",
            "object": "2.0.0",
            "source_type": "code",
        },
    ).fact


def refused(sql: str, params: list) -> bool:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    except IntegrityError:
        return True
    return False


def copy_of(fact: Fact, **changes) -> tuple[str, list]:
    """Raw SQL inserting a copy of ``fact`` with ``changes`` (bypassing every Python check)."""
    columns = {
        "id": "gen_random_uuid()",
        "scope_id": fact.scope_id,
        "subject_id": fact.subject_id,
        "predicate_id": fact.predicate_id,
        "object_kind": fact.object_kind,
        "object_ref_id": None,
        "object_lit": fact.object_lit,
        "object_key": fact.object_key,
        "epistemic": fact.epistemic,
        "source_type_id": fact.source_type_id,
        "confidence": fact.confidence,
        "episode": "",
        "statement": "",
        "evidence": "[]",
        "author_id": fact.author_id,
        "bucket": fact.bucket,
        "t_valid": fact.t_valid,
        "t_invalid": None,
        "recorded_at": timezone.now(),
        "last_reinforced_at": timezone.now(),
        "invalidation_kind": "",
        "invalidation_reason": "",
        **changes,
    }
    names = ", ".join(columns)
    values = ", ".join("gen_random_uuid()" if c == "id" else "%s" for c in columns)
    params = [v for c, v in columns.items() if c != "id"]
    return f"INSERT INTO memories_fact ({names}) VALUES ({values})", params


def test_a_second_live_fact_with_the_same_value_is_refused(fact):
    assert refused(*copy_of(fact))


def test_a_closed_copy_of_a_live_fact_is_allowed(fact):
    later = timezone.now()
    assert not refused(*copy_of(fact, t_valid=fact.t_valid, t_invalid=later))


def test_user_bucket_duplicates_are_refused_per_author_only(fact, member, author):
    mine = copy_of(fact, bucket="user", author_id=member.pk)
    assert not refused(*mine)
    assert refused(*copy_of(fact, bucket="user", author_id=member.pk))
    assert not refused(*copy_of(fact, bucket="user", author_id=author.pk))


@pytest.mark.parametrize("confidence", [-0.01, 1.01])
def test_confidence_outside_the_unit_interval_is_refused(fact, confidence):
    Fact.objects.filter(pk=fact.pk).update(t_invalid=timezone.now())
    assert refused(*copy_of(fact, confidence=confidence))


def test_object_must_match_its_kind(fact):
    Fact.objects.filter(pk=fact.pk).update(t_invalid=timezone.now())
    assert refused(*copy_of(fact, object_kind="entity"))
    assert refused(*copy_of(fact, object_lit=None))
    assert refused(*copy_of(fact, object_ref_id=fact.subject_id))


def test_interval_must_end_after_it_starts(fact):
    assert refused(*copy_of(fact, object_key="other", t_invalid=fact.t_valid))


def test_a_member_filed_under_another_scope_than_its_conflicts_is_refused(fact, other_scope):
    conflict = Conflict.objects.create(
        scope_id=fact.scope_id,
        kind="outranked",
        subject_id=fact.subject_id,
        predicate_id=fact.predicate_id,
        opened_at=timezone.now(),
    )
    insert = (
        "INSERT INTO memories_conflictmember (conflict_id, fact_id, scope_id, role, disputes)"
        " VALUES (%s, %s, %s, 'incoming', true)"
    )
    assert refused(insert, [conflict.pk, fact.pk, other_scope.pk])
    assert not refused(insert, [conflict.pk, fact.pk, fact.scope_id])


def _entity(scope, name):
    entity = Entity(scope=scope, name=name)
    entity.set_keys()
    entity.save()
    return entity


def test_a_fact_on_a_subject_or_object_of_another_scope_is_refused(fact, other_scope):
    stranger, friend = _entity(other_scope, "Stranger"), _entity(fact.scope, "Friend")
    # a fact of one scope about another scope's entity, as subject or as object
    for subject, refusal in [(stranger, True), (friend, False)]:
        assert refused(*copy_of(fact, subject_id=subject.pk)) is refusal
    for thing, refusal in [(stranger, True), (friend, False)]:
        as_object = {"object_kind": "entity", "object_lit": None, "object_key": str(thing.pk)}
        assert refused(*copy_of(fact, object_ref_id=thing.pk, **as_object)) is refusal
    # moving the subject to another scope would leave its facts behind: refused too
    move = "UPDATE memories_entity SET scope_id = %s WHERE id = %s"
    assert refused(move, [other_scope.pk, fact.subject_id])
