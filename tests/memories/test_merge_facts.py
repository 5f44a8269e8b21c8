"""Issue 29 §3: a merge moves the merged-away entity's facts, through the write path's rules."""

import json
import threading
import time
from datetime import timedelta

import pytest
from django.db import connections, transaction
from django.db.models import Q

from memories.store.models import AuditEntry, Conflict, Entity, Fact
from memories.write.actions import assert_fact
from memories.write.ingest import import_lines
from memories.write.merges import merge_entities
from tests.conftest import at
from tests.racing import a_session_waits_on_a_lock

pytestmark = pytest.mark.django_db

T0 = at("2026-04-01T09:00:00")


def write(actor, subject, predicate, obj, source, when, **extra):
    data = {"scope": "project", "subject": subject, "predicate": predicate, "object": obj}
    data |= {"source_type": source, "t_valid": when.isoformat(), **extra}
    return assert_fact(actor=actor, data=data, now=when).fact


def merge(steward, name, into):
    entity, survivor = (Entity.objects.get(name=n) for n in (name, into))
    merge_entities(
        actor=steward,
        entity_id=entity.pk,
        into_id=survivor.pk,
        reason="one service",
        now=T0 + timedelta(days=1),
    )
    return entity, survivor


def test_a_merged_away_contradiction_moves_and_opens_a_conflict(steward, member):
    older = write(member, "PaySvc2", "core/has-version", "1.0.0", "code", T0)
    history = write(member, "PaySvc2", "core/owned-by", "team-a", "code", T0)
    Fact.objects.filter(pk=history.pk).update(t_invalid=T0 + timedelta(hours=1))
    standing = write(member, "PaySvc", "core/has-version", "2.0.0", "code", T0 + timedelta(hours=2))
    entity, survivor = merge(steward, "PaySvc2", "PaySvc")

    assert not Fact.objects.filter(subject=entity).exists()
    assert set(Fact.objects.filter(subject=survivor).values_list("pk", flat=True)) == {
        older.pk,
        history.pk,
        standing.pk,
    }
    [conflict] = Conflict.objects.open()
    assert conflict.subject_id == survivor.pk
    assert set(conflict.members.values_list("fact_id", flat=True)) == {older.pk, standing.pk}
    live = Fact.objects.live().filter(subject=survivor, predicate__name="core/has-version")
    undisputed = [f.object_lit for f in live.with_disputed() if not f.disputed]
    assert undisputed == ["2.0.0"]


def test_a_merged_away_newer_value_supersedes_and_a_duplicate_is_kept_once(steward, member):
    write(member, "PaySvc", "core/has-version", "1.0.0", "code", T0)
    newer = write(member, "PaySvc2", "core/has-version", "2.0.0", "code", T0 + timedelta(hours=1))
    kept = write(member, "PaySvc", "core/uses", "postgres", "code", T0)
    twin = write(member, "PaySvc2", "core/uses", "postgres", "code", T0 + timedelta(hours=1))
    _, survivor = merge(steward, "PaySvc2", "PaySvc")

    versions = Fact.objects.live().filter(subject=survivor, predicate__name="core/has-version")
    assert [f.pk for f in versions] == [newer.pk]
    uses = Fact.objects.live().filter(subject=survivor, predicate__name="core/uses")
    assert [f.pk for f in uses] == [kept.pk]
    closed = Fact.objects.get(pk=twin.pk)
    assert closed.subject_id == survivor.pk and closed.superseded_by_id == kept.pk
    assert not Conflict.objects.open().exists()


def test_a_conflict_already_on_the_merged_away_entity_names_the_survivor(steward, member):
    write(member, "PaySvc2", "core/has-version", "2.0.0", "code", T0)
    flagged = write(member, "PaySvc2", "core/has-version", "3.0.0", "agent-note", T0)
    [conflict] = Conflict.objects.open()
    write(member, "PaySvc", "core/uses", "postgres", "code", T0)
    _, survivor = merge(steward, "PaySvc2", "PaySvc")
    [still] = Conflict.objects.open()
    assert still.pk == conflict.pk and still.subject_id == survivor.pk
    assert Fact.objects.get(pk=flagged.pk).subject_id == survivor.pk


def test_facts_naming_the_merged_away_entity_as_object_point_at_the_survivor(steward, member):
    kept = write(member, "api", "core/depends-on", "PG", "code", T0, object_kind="entity")
    twin = write(
        member,
        "api",
        "core/depends-on",
        "Postgres",
        "code",
        T0 + timedelta(hours=1),
        object_kind="entity",
    )
    other = write(member, "worker", "core/depends-on", "Postgres", "code", T0, object_kind="entity")
    entity, survivor = merge(steward, "Postgres", "PG")

    assert not Fact.objects.filter(object_ref=entity).exists()
    # "api depends-on Postgres" became a duplicate of "api depends-on PG": one live row, reinforced.
    live = Fact.objects.live().filter(predicate__name="core/depends-on")
    assert sorted(live.values_list("subject__name", "object_ref__name")) == [
        ("api", "PG"),
        ("worker", "PG"),
    ]
    assert set(live.values_list("pk", flat=True)) == {kept.pk, other.pk}
    twin.refresh_from_db()
    assert twin.object_ref_id == survivor.pk and twin.superseded_by_id == kept.pk
    assert Fact.objects.get(pk=other.pk).object_key == str(survivor.pk)
    assert not Conflict.objects.open().exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_write_racing_a_merge_lands_on_the_survivor(steward, member):
    import threading

    from django.db import connections, transaction

    write(member, "PaySvc", "core/has-version", "1.0.0", "code", T0)
    write(member, "PaySvc2", "core/uses", "redis", "code", T0)
    entity, survivor = (Entity.objects.get(name=n) for n in ("PaySvc2", "PaySvc"))
    outcome = {}

    def racing_write():
        try:
            when = T0 + timedelta(hours=3)
            outcome["fact"] = write(member, "PaySvc2", "core/owned-by", "team-a", "code", when)
        except Exception as exc:  # reported below, in the test's thread
            outcome["error"] = exc
        finally:
            connections.close_all()

    with transaction.atomic():
        merge_entities(
            actor=steward,
            entity_id=entity.pk,
            into_id=survivor.pk,
            reason="one service",
            now=T0 + timedelta(days=1),
        )
        writer = threading.Thread(target=racing_write)
        writer.start()
        writer.join(timeout=1.5)
        # The merge is not committed yet: the write, which found PaySvc2 unmerged, waits.
        assert writer.is_alive()
    writer.join(timeout=30)
    assert not writer.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert Fact.objects.get(pk=outcome["fact"].pk).subject_id == survivor.pk
    assert not Fact.objects.filter(subject=entity).exists()


def merge_while_a_write_races(steward, name, into, racing_write):
    """Merge ``name`` into ``into`` and, before the merge commits, start ``racing_write``.

    Answers what the write returned, once the merge has committed: the
    write, which found the entity unmerged, must wait for the merge and then
    answer as the survivor. Real threads, each with its own session.
    """
    entity, survivor = (Entity.objects.get(name=n) for n in (name, into))
    outcome = {}

    def run():
        try:
            outcome["fact"] = racing_write()
        except Exception as exc:  # reported below, in the test's thread
            outcome["error"] = exc
        finally:
            connections.close_all()

    with transaction.atomic():
        merge_entities(
            actor=steward,
            entity_id=entity.pk,
            into_id=survivor.pk,
            reason="one thing",
            now=T0 + timedelta(days=1),
        )
        writer = threading.Thread(target=run)
        writer.start()
        deadline = time.monotonic() + 10
        while writer.is_alive() and not a_session_waits_on_a_lock():
            assert time.monotonic() < deadline, "the racing write never waited for the merge"
            time.sleep(0.02)
        # The merge is not committed yet: the write waits for it.
        assert writer.is_alive(), outcome
    writer.join(timeout=30)
    assert not writer.is_alive()
    assert "error" not in outcome, outcome.get("error")
    return entity, survivor, Fact.objects.get(pk=outcome["fact"].pk)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_non_member_stewards_write_racing_a_merge_lands_on_the_survivor(
    steward, member, scope_steward
):
    write(member, "PaySvc", "core/has-version", "1.0.0", "code", T0)
    write(member, "PaySvc2", "core/uses", "redis", "code", T0)
    when = T0 + timedelta(hours=3)

    entity, survivor, fact = merge_while_a_write_races(
        steward,
        "PaySvc2",
        "PaySvc",
        lambda: write(scope_steward, "PaySvc2", "core/owned-by", "team-a", "code", when),
    )

    assert fact.subject_id == survivor.pk
    assert not Fact.objects.filter(subject=entity).exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("writer", ["member", "scope_steward"])
def test_a_fact_naming_an_object_being_merged_away_ends_on_the_survivor(
    steward, member, scope_steward, writer
):
    write(member, "api", "core/depends-on", "PG", "code", T0, object_kind="entity")
    write(member, "svc", "core/depends-on", "Postgres", "code", T0, object_kind="entity")
    actor = {"member": member, "scope_steward": scope_steward}[writer]
    when = T0 + timedelta(hours=3)

    entity, survivor, fact = merge_while_a_write_races(
        steward,
        "Postgres",
        "PG",
        lambda: write(
            actor, "worker", "core/depends-on", "Postgres", "code", when, object_kind="entity"
        ),
    )

    assert (fact.object_ref_id, fact.object_key) == (survivor.pk, str(survivor.pk))
    assert not Fact.objects.filter(object_ref=entity).exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize(
    ("name", "into", "line", "moved"),
    [
        pytest.param(
            "PaySvc2",
            "PaySvc",
            {"subject": "PaySvc2", "predicate": "core/owned-by", "object": "team-a"},
            "subject_id",
            id="subject",
        ),
        pytest.param(
            "Postgres",
            "PG",
            {"subject": "worker", "predicate": "core/depends-on", "object": "Postgres"}
            | {"object_kind": "entity"},
            "object_ref_id",
            id="object",
        ),
        pytest.param(
            "PaySvc2",
            "PaySvc",
            # U+0420, a Cyrillic capital ER: a look-alike of PaySvc2, so of the survivor.
            {"subject": "\u0420aySvc2", "predicate": "core/owned-by", "object": "team-a"},
            "subject_id",
            id="look-alike-subject",
        ),
    ],
)
def test_an_imported_line_racing_a_merge_lands_on_the_survivor(
    steward, member, name, into, line, moved
):
    write(member, "PaySvc", "core/has-version", "1.0.0", "code", T0)
    write(member, "PaySvc2", "core/uses", "redis", "code", T0)
    write(member, "api", "core/depends-on", "PG", "code", T0, object_kind="entity")
    write(member, "svc", "core/depends-on", "Postgres", "code", T0, object_kind="entity")
    when = (T0 + timedelta(hours=3)).isoformat()
    text = json.dumps({"scope": "project", "source_type": "code", "t_valid": when, **line})

    def racing_import():
        (outcome,) = import_lines([text], actor=member).outcomes
        assert outcome.status == "created", outcome
        return Fact.objects.get(pk=outcome.fact_id)

    entity, survivor, fact = merge_while_a_write_races(steward, name, into, racing_import)

    assert getattr(fact, moved) == survivor.pk
    assert not Fact.objects.filter(Q(subject=entity) | Q(object_ref=entity)).exists()
    # A look-alike name is said to name the entity the fact names.
    for note in AuditEntry.objects.filter(action="resolved-name", after__fact=str(fact.pk)):
        assert (note.target_id, note.after["entity"]) == (str(survivor.pk), survivor.name)
    if "\u0420" in line["subject"]:
        assert AuditEntry.objects.filter(action="resolved-name").count() == 1
