"""The write path against the real database: SPEC §2's acceptance examples and more."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memories.reads.selectors import current_truth
from memories.store.errors import Forbidden, NotFound, Rejected, StateConflict
from memories.store.models import Conflict, Entity, Fact
from memories.write.actions import assert_fact, invalidate_fact, resolve_conflict
from tests.conftest import at

pytestmark = pytest.mark.django_db


def write(actor, subject, predicate, obj, source, now=None, **extra):
    return assert_fact(
        actor=actor,
        data={
            "scope": "project",
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "source_type": source,
            **extra,
        },
        now=now,
    )


# --- SPEC §2 acceptance examples ----------------------------------------------------


def test_example_1_commitment_flags_and_a_steward_invalidates_the_newcomer(member, steward):
    decided = write(
        member,
        "api-layer",
        "core/decided-against",
        "GraphQL",
        "decision-record",
        epistemic="commitment",
    )
    assert decided.status == "created"
    assert decided.fact.confidence == pytest.approx(0.8)

    clash = write(member, "api-layer", "core/prefers", "GraphQL", "session-log")
    assert (clash.status, clash.reason) == ("flagged", "commitment")
    assert [fact.pk for fact in clash.candidates] == [decided.fact.pk]
    assert Conflict.objects.open().count() == 1

    result = invalidate_fact(actor=steward, fact_id=clash.fact.pk, reason="the ADR stands")
    assert result.status == "invalidated"
    assert Conflict.objects.open().count() == 0
    assert Fact.objects.get(pk=decided.fact.pk).is_live


def test_example_2_reinforcement_is_a_high_water_mark_with_a_ceiling(member):
    args = (member, "team", "core/prefers", "trunk-based development", "user-assertion")
    first = write(*args, confidence=0.8)
    assert (first.status, first.fact.epistemic) == ("created", "preference")
    second = write(*args, confidence=0.6)
    assert (second.status, second.fact.confidence) == ("reinforced", pytest.approx(0.8))
    third = write(*args, confidence=0.95)
    assert (third.status, third.fact.confidence) == ("reinforced", pytest.approx(0.9))
    assert Fact.objects.count() == 1


def test_example_3_lower_trust_source_cannot_supersede(member):
    assert (
        write(member, "AuthService", "core/has-version", "2.0.0", "code", confidence=0.95).status
        == "created"
    )
    outranked = write(member, "AuthService", "core/has-version", "3.0.0", "agent-note")
    assert (outranked.status, outranked.reason) == ("flagged", "outranked")


def test_example_4_low_trust_revenant_is_flagged_against_the_live_rival(member):
    heroku = write(member, "shoply", "core/deployed-via", "Heroku", "user-assertion")
    invalidate_fact(actor=member, fact_id=heroku.fact.pk, reason="migrated to Fly")
    fly = write(member, "shoply", "core/deployed-via", "Fly", "user-assertion")
    assert fly.status == "created"
    planted = write(member, "shoply", "core/deployed-via", "Heroku", "agent-note")
    assert (planted.status, planted.reason) == ("flagged", "revenant")
    assert [fact.pk for fact in planted.candidates] == [fly.fact.pk]


def test_example_5_same_rank_supersedes_and_closes_the_old_interval(member):
    old = write(member, "AuthService", "core/has-version", "2.0.0", "code", confidence=0.95)
    new = write(member, "AuthService", "core/has-version", "2.1.0", "code")
    assert new.status == "superseded"
    assert new.superseded == [old.fact.pk]
    old_fact = Fact.objects.get(pk=old.fact.pk)
    assert old_fact.t_invalid == new.fact.t_valid
    assert old_fact.superseded_by_id == new.fact.pk
    assert old_fact.invalidation_kind == "superseded"


# --- around the examples --------------------------------------------------------------


def test_flagged_incoming_fact_is_disputed_and_the_standing_one_stays_believed(member):
    code = write(member, "AuthService", "core/has-version", "2.0.0", "code")
    write(member, "AuthService", "core/has-version", "3.0.0", "agent-note")
    truth = current_truth(viewer=member, scope=code.fact.scope, as_of=timezone.now())
    assert [entry.fact.pk for entry in truth] == [code.fact.pk]
    disputed = Fact.objects.with_disputed().get(object_lit="3.0.0")
    assert disputed.disputed and disputed.is_live


def test_spelling_variants_reinforce_instead_of_conflicting(member):
    first = write(member, "Team", "core/prefers", "Trunk-Based  Development", "user-assertion")
    again = write(member, " team ", "core/prefers", "trunk-based development", "user-assertion")
    assert again.status == "reinforced"
    assert again.fact.pk == first.fact.pk
    assert Entity.objects.count() == 1


def test_entities_match_by_alias(member, scope):
    entity = Entity(scope=scope, name="AuthService", aliases=["auth-svc"])
    entity.set_keys()
    entity.save()
    write(member, "AuthService", "core/has-version", "2.0.0", "code")
    again = write(member, "AUTH-SVC", "core/has-version", "2.0.0", "code")
    assert again.status == "reinforced"


def test_entity_objects_compare_by_entity(member):
    first = write(member, "api", "core/depends-on", "Postgres", "code", object_kind="entity")
    again = write(member, "api", "core/depends-on", "postgres", "code", object_kind="entity")
    assert again.status == "reinforced"
    assert first.fact.object_ref.name == "Postgres"


def test_escalation_supersedes_the_observation_with_a_commitment(member):
    seen = write(member, "api-layer", "core/uses", "REST", "session-log")
    bound = write(
        member, "api-layer", "core/uses", "REST", "user-assertion", epistemic="commitment"
    )
    assert (bound.status, bound.superseded) == ("superseded", [seen.fact.pk])
    assert Fact.objects.get(pk=seen.fact.pk).superseded_by_id == bound.fact.pk


def test_user_bucket_facts_compare_only_with_their_authors(member, author):
    mine = write(member, "editor", "core/prefers", "vim", "user-assertion", bucket="user")
    theirs = write(author, "editor", "core/prefers", "vim", "user-assertion", bucket="user")
    assert (mine.status, theirs.status) == ("created", "created")
    assert Fact.objects.count() == 2


def test_reinforcement_resets_the_disuse_clock_and_keeps_evidence(member):
    then = at("2026-01-01")
    first = write(
        member,
        "team",
        "core/uses",
        "pytest",
        "session-log",
        now=then,
        evidence=[{"ref": "log-1", "quote": "we run pytest"}],
    )
    later = then + timedelta(days=90)
    again = write(
        member,
        "team",
        "core/uses",
        "pytest",
        "user-assertion",
        now=later,
        evidence=[{"ref": "chat-9"}],
    )
    fact = Fact.objects.get(pk=first.fact.pk)
    assert again.status == "reinforced"
    assert fact.last_reinforced_at == later
    assert fact.source_type.name == "user-assertion"
    assert fact.evidence == [
        {"ref": "log-1", "quote": "we run pytest"},
        {"ref": "chat-9", "quote": ""},
    ]


def test_the_created_fact_answered_from_memory_is_the_stored_row(member):
    result = write(
        member,
        "api",
        "core/uses",
        "postgres",
        "code",
        evidence=[{"ref": "commit-1", "quote": "psycopg"}],
        episode="ep-1",
    )
    stored = Fact.objects.for_display().get(pk=result.fact.pk)
    for field in Fact._meta.concrete_fields:
        assert getattr(result.fact, field.attname) == getattr(stored, field.attname), field.name
    assert result.fact.scope.name == stored.scope.name
    assert result.fact.subject.name == stored.subject.name
    assert result.fact.predicate.name == stored.predicate.name
    assert result.fact.source_type.name == stored.source_type.name
    assert result.fact.author == member
    assert result.fact.object_ref is None
    assert not result.fact._state.adding


# --- bad input: a clear error and nothing written ------------------------------------


def table_counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        counts = {}
        for table in ("memories_fact", "memories_entity", "memories_conflict"):
            cursor.execute(f"SELECT count(*) FROM {table}")
            counts[table] = cursor.fetchone()[0]
        return counts


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"predicate": "core/likes"}, "predicate"),
        ({"source_type": "rumour"}, "source_type"),
        ({"epistemic": "hunch"}, "epistemic"),
        ({"subject": ""}, "subject"),
        ({"object": ""}, "object"),
        ({"confidence": float("nan")}, "confidence"),
        ({"object": "x" * 2001}, "object"),
        ({"t_valid": "yesterday-ish"}, "t_valid"),
        ({"t_valid": "2026-05-01T00:00:00Z", "t_invalid": "2026-04-01T00:00:00Z"}, "t_invalid"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(member, change, field):
    write(member, "AuthService", "core/has-version", "2.0.0", "code")
    before = table_counts()
    data = {
        "subject": "AuthService",
        "predicate": "core/has-version",
        "object": "9.9.9",
        "source_type": "code",
        **change,
    }
    with pytest.raises(Rejected) as refused:
        write(
            member,
            data.pop("subject"),
            data.pop("predicate"),
            data.pop("object"),
            data.pop("source_type"),
            **data,
        )
    assert refused.value.field == field
    assert table_counts() == before


def test_missing_and_forbidden_scopes_answer_alike(member, outsider):
    data = {"subject": "x", "predicate": "core/uses", "object": "y", "source_type": "code"}
    with pytest.raises(NotFound) as missing:
        assert_fact(actor=member, data={**data, "scope": "no-such-scope"})
    with pytest.raises(NotFound) as forbidden:
        assert_fact(actor=outsider, data={**data, "scope": "project"})
    assert str(missing.value) == str(forbidden.value)
    assert Fact.objects.count() == 0


# --- invalidation and conflict resolution ---------------------------------------------


def test_only_author_or_steward_may_invalidate(member, author, outsider, scope_steward):
    fact = write(author, "svc", "core/uses", "redis", "code").fact
    with pytest.raises(Forbidden):
        invalidate_fact(actor=member, fact_id=fact.pk, reason="nope")
    with pytest.raises(NotFound):
        invalidate_fact(actor=outsider, fact_id=fact.pk, reason="nope")
    invalidate_fact(actor=scope_steward, fact_id=fact.pk, reason="retired")
    with pytest.raises(StateConflict):
        invalidate_fact(actor=author, fact_id=fact.pk, reason="again")


def test_invalidation_needs_a_reason(author):
    fact = write(author, "svc", "core/uses", "redis", "code").fact
    with pytest.raises(Rejected) as refused:
        invalidate_fact(actor=author, fact_id=fact.pk, reason="  ")
    assert refused.value.field == "reason"
    assert Fact.objects.get(pk=fact.pk).is_live


def make_outranked_conflict(actor):
    code = write(actor, "AuthService", "core/has-version", "2.0.0", "code")
    note = write(actor, "AuthService", "core/has-version", "3.0.0", "agent-note")
    return code.fact, note.fact, note.conflict


def test_keep_this_invalidates_the_other_candidates_with_the_reason(member, steward):
    code, note, conflict = make_outranked_conflict(member)
    resolved = resolve_conflict(
        actor=steward,
        conflict_id=conflict.pk,
        action="keep",
        keep=[note.pk],
        reason="checked the release",
    )
    assert (resolved.resolution, resolved.resolved_by) == ("kept", steward)
    assert not Fact.objects.get(pk=code.pk).is_live
    assert Fact.objects.get(pk=code.pk).invalidation_reason == "checked the release"
    assert not Fact.objects.with_disputed().get(pk=note.pk).disputed


@pytest.mark.parametrize("action", ["coexist", "dismiss"])
def test_coexist_and_dismiss_leave_every_fact_valid(member, steward, action):
    _code, _note, conflict = make_outranked_conflict(member)
    resolve_conflict(actor=steward, conflict_id=conflict.pk, action=action, reason="both fine")
    assert Fact.objects.live().count() == 2
    assert Conflict.objects.open().count() == 0


def test_resolution_is_refused_to_members_without_a_reason_or_twice(member, steward, outsider):
    _, _note, conflict = make_outranked_conflict(member)
    with pytest.raises(Forbidden):
        resolve_conflict(actor=member, conflict_id=conflict.pk, action="dismiss", reason="mine")
    with pytest.raises(NotFound):
        resolve_conflict(actor=outsider, conflict_id=conflict.pk, action="dismiss", reason="x")
    with pytest.raises(Rejected):
        resolve_conflict(actor=steward, conflict_id=conflict.pk, action="dismiss", reason="")
    with pytest.raises(Rejected):
        resolve_conflict(actor=steward, conflict_id=conflict.pk, action="keep", keep=[], reason="r")
    resolve_conflict(actor=steward, conflict_id=conflict.pk, action="dismiss", reason="noise")
    with pytest.raises(StateConflict):
        resolve_conflict(actor=steward, conflict_id=conflict.pk, action="coexist", reason="again")


# --- current truth, as of -------------------------------------------------------------


def test_truth_as_of_a_valid_time_and_a_knowledge_time(member, scope):
    jan, feb, mar = at("2026-01-01"), at("2026-02-01"), at("2026-03-01")
    old = write(
        member,
        "AuthService",
        "core/has-version",
        "1.0",
        "code",
        t_valid="2025-12-01T00:00:00Z",
        now=jan,
    )
    new = write(
        member,
        "AuthService",
        "core/has-version",
        "2.0",
        "code",
        t_valid="2026-02-15T00:00:00Z",
        now=mar,
    )
    assert new.status == "superseded"

    def values(**when):
        return [e.fact.object_lit for e in current_truth(viewer=member, scope=scope, **when)]

    assert values(as_of=feb) == ["1.0"]
    assert values(as_of=mar) == ["2.0"]
    # In February the store did not yet know of 2.0, so as known then 1.0 still held in March.
    assert values(as_of=mar, known_at=feb) == ["1.0"]
    assert values(as_of=at("2025-06-01")) == []
    assert old.fact.pk != new.fact.pk


def test_truth_hides_other_authors_user_facts(member, author, scope):
    write(author, "editor", "core/prefers", "emacs", "user-assertion", bucket="user")
    write(member, "editor", "core/prefers", "vim", "user-assertion", bucket="user")
    truth = current_truth(viewer=member, scope=scope, as_of=timezone.now())
    assert [entry.fact.object_lit for entry in truth] == ["vim"]
