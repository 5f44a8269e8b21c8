"""Entity merges: recorded, reversible, followed by the write path, steward-only."""

import pytest
from django.urls import reverse

from memories.store.errors import Forbidden, NotFound, Rejected, StateConflict
from memories.store.lookups import find_entity
from memories.store.models import AuditEntry, Entity, EntityMerge
from memories.write.merges import merge_entities, undo_merge
from tests.console.conftest import write

pytestmark = pytest.mark.django_db


@pytest.fixture
def spellings(member, scope):
    write(member, "PostgreSQL", "core/has-version", "17", "code")
    write(member, "Postgres", "core/owned-by", "data-team", "session-log")
    return Entity.objects.get(name="Postgres"), Entity.objects.get(name="PostgreSQL")


def test_after_a_merge_new_writes_naming_either_spelling_land_on_one_entity(
    steward, member, scope, spellings
):
    postgres, postgresql = spellings
    merge_entities(actor=steward, entity_id=postgres.pk, into_id=postgresql.pk, reason="same")
    result = write(member, "postgres", "core/uses", "pgvector", "session-log")
    assert result.fact.subject_id == postgresql.pk
    assert find_entity(scope, "Postgres") == postgresql
    assert AuditEntry.objects.filter(action="merged-entity").count() == 1


def test_undoing_a_merge_is_a_later_record_and_restores_the_lookup(steward, scope, spellings):
    postgres, postgresql = spellings
    merge = merge_entities(
        actor=steward, entity_id=postgres.pk, into_id=postgresql.pk, reason="same"
    )
    undo = undo_merge(actor=steward, merge_id=merge.pk, reason="they differ after all")
    assert undo.undoes == merge
    assert EntityMerge.objects.count() == 2 and not EntityMerge.objects.in_force().exists()
    assert find_entity(scope, "Postgres") == postgres
    with pytest.raises(StateConflict):
        undo_merge(actor=steward, merge_id=merge.pk, reason="again")


def test_merges_never_chain(steward, member, spellings):
    postgres, postgresql = spellings
    write(member, "pg", "core/owned-by", "data-team", "session-log")
    pg = Entity.objects.get(name="pg")
    merge_entities(actor=steward, entity_id=postgres.pk, into_id=postgresql.pk, reason="same")
    with pytest.raises(StateConflict):
        merge_entities(actor=steward, entity_id=pg.pk, into_id=postgres.pk, reason="chain")
    with pytest.raises(StateConflict):
        merge_entities(actor=steward, entity_id=postgresql.pk, into_id=pg.pk, reason="chain")
    with pytest.raises(Rejected):
        merge_entities(actor=steward, entity_id=pg.pk, into_id=pg.pk, reason="self")


def test_only_a_steward_of_the_scope_merges_and_outsiders_see_nothing(member, outsider, spellings):
    postgres, postgresql = spellings
    with pytest.raises(Forbidden):
        merge_entities(actor=member, entity_id=postgres.pk, into_id=postgresql.pk, reason="x")
    with pytest.raises(NotFound):
        merge_entities(actor=outsider, entity_id=postgres.pk, into_id=postgresql.pk, reason="x")
    assert not EntityMerge.objects.exists()


def test_merge_needs_a_reason(steward, spellings):
    postgres, postgresql = spellings
    with pytest.raises(Rejected) as refused:
        merge_entities(actor=steward, entity_id=postgres.pk, into_id=postgresql.pk, reason=" ")
    assert refused.value.field == "reason"


def test_entities_page_merges_by_name_and_undoes(as_steward, as_member, spellings):
    post = {"scope": "project", "entity": "postgres", "into": "PostgreSQL", "reason": "same"}
    assert as_member.post(reverse("entity-merge"), post).status_code == 403
    response = as_steward.post(reverse("entity-merge"), post)
    assert response.status_code == 302
    merge = EntityMerge.objects.in_force().get()
    page = as_steward.get(reverse("entities")).content.decode()
    assert "Undo merge</button>" in page
    assert "Undo merge</button>" not in as_member.get(reverse("entities")).content.decode()
    url = reverse("entity-unmerge", args=[merge.pk])
    assert as_steward.post(url, {"reason": "different"}).status_code == 302
    assert not EntityMerge.objects.in_force().exists()


def test_entities_page_names_an_unknown_entity(as_steward, spellings):
    post = {"scope": "project", "entity": "mysql", "into": "PostgreSQL", "reason": "same"}
    response = as_steward.post(reverse("entity-merge"), post)
    assert response.status_code == 400
    assert "No entity with that name in project." in response.content.decode()
