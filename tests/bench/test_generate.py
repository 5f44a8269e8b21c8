"""The bench store generator (bench/generate.py) builds a store the application agrees with.

Generated at a small size on the test database, then read back through the
application's own code: the admission statuses PostgreSQL derives equal the
pure fold, the truth slots equal what ``memories.maintenance.truth`` recomputes, the
agent's token reads facts over the API, the write path goes on writing, and
one seed gives one store.
"""

import hashlib
import sys
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.db.models import Count

from accounts.models import ApiToken
from admissions import status
from admissions.models import FactVerdict, OpenChallenge, Record, ScopeTally
from admissions.selectors import fact_status, recall, share_percent
from memories.core.truth import decide_slot, settle
from memories.maintenance.crawler import run_crawl
from memories.maintenance.truth import _value_json, load_claims, predicate_spec, recompute_slot
from memories.store.models import (
    AuditEntry,
    Bucket,
    Cardinality,
    Conflict,
    ConflictKind,
    ConflictMember,
    CrawlerRun,
    Entity,
    Fact,
    Predicate,
    Scope,
    TruthSlot,
)
from memories.write.actions import assert_fact

# Appended, not put first: bench/ holds scripts named like the apps (admissions.py).
sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))

import generate

FACTS = 5_000

pytestmark = pytest.mark.django_db


@pytest.fixture
def store():
    return generate.generate(FACTS, seed=0)


def test_counts_are_as_asked(store):
    assert Fact.objects.count() == FACTS
    assert Entity.objects.count() == FACTS // 5
    assert Scope.objects.count() == 50
    assert Conflict.objects.open().count() == FACTS // 100
    assert Record.objects.count() == FACTS
    assert Record.objects.values("fact").distinct().count() == FACTS // 10
    assert set(Record.objects.values_list("role", flat=True).distinct()) == {
        "admission",
        "challenge",
        "refutation",
    }
    assert AuditEntry.objects.exists()
    assert CrawlerRun.objects.filter(finished_at__isnull=False).count() == 1
    # Shape: history, invalidations, both buckets.
    assert Fact.objects.filter(invalidation_kind="superseded", superseded_by__isnull=False).exists()
    assert Fact.objects.filter(invalidation_kind="invalidated").exists()
    assert Fact.objects.filter(bucket=Bucket.USER).count() > FACTS // 20
    assert Fact.objects.values("source_type").distinct().count() == 7
    assert Fact.objects.values("epistemic").distinct().count() == 3


def test_samples_fit_their_descriptions(store):
    assert len(store.scope_ids) == 50
    assert len(store.fact_ids) == 1_000
    agent = ApiToken.objects.get(user_id=store.agent_id).user
    readable = Fact.objects.readable_by(agent).live().filter(pk__in=store.fact_ids)
    assert readable.count() == len(store.fact_ids)
    assert len(store.system_fact_ids) == FACTS // 10
    assert Fact.objects.filter(
        pk__in=store.system_fact_ids, bucket=Bucket.SYSTEM, records__isnull=False
    ).distinct().count() == len(store.system_fact_ids)
    assert Conflict.objects.open().filter(scope_id=store.conflict_scope_id).count() >= min(
        200, FACTS // 100 // 2
    )
    assert len(store.subjects) == min(200, FACTS // 300)
    for scope_id, entity_id in store.subjects[:20]:
        scope = Scope.objects.get(pk=scope_id)
        name = Entity.objects.get(pk=entity_id).name
        entries = recall(viewer=agent, scope=scope, subject=name, as_of=generate.ANCHOR)
        assert 8 <= len(entries) <= 20


def test_every_conflict_kind_with_members_as_the_write_path_gives(store):
    assert set(Conflict.objects.values_list("kind", flat=True)) == set(ConflictKind.values)
    assert not Conflict.objects.annotate(n=Count("members")).filter(n__lt=2).exists()
    # A write-path conflict: one incoming disputed member against standing ones.
    for conflict in Conflict.objects.exclude(kind__in=generate.ALL_DISPUTED_KINDS):
        roles = sorted(conflict.members.values_list("role", "disputes"))
        assert roles == [("existing", False), ("incoming", True)]
    # Opened by the crawler, a revert or truth maintenance: every member disputed.
    for conflict in Conflict.objects.filter(kind__in=generate.ALL_DISPUTED_KINDS):
        assert set(conflict.members.values_list("role", "disputes")) == {("existing", True)}
    # A revenant: a retired value back beside a live rival on a many-valued predicate.
    for conflict in Conflict.objects.filter(kind="revenant"):
        incoming = conflict.members.get(role="incoming").fact
        assert conflict.predicate.cardinality == Cardinality.MANY
        assert Fact.objects.filter(
            scope=conflict.scope,
            subject=conflict.subject,
            predicate=conflict.predicate,
            object_key=incoming.object_key,
            invalidation_kind="invalidated",
        ).exists()


def test_one_valued_slots_hold_one_undisputed_value_unless_a_conflict_holds_them(store):
    one = Predicate.objects.filter(cardinality=Cardinality.ONE)
    crowded = (
        Fact.objects.live()
        .undisputed()
        .filter(bucket=Bucket.SYSTEM, predicate__in=one)
        .values("scope", "subject", "predicate")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    assert not crowded.exists()


def test_admission_statuses_in_sql_equal_the_pure_fold(store):
    for scope_id in store.scope_ids[:4]:
        records = [
            status.PlainRecord(
                id=r.id,
                fact_id=r.fact_id,
                role=r.role,
                author_id=r.author_id,
                inserted_at=r.inserted_at,
                verdict=r.verdict,
                evidenced=r.evidence is not None,
                challenge_id=r.challenge_id,
                author_name=r.author.username,
            )
            for r in Record.objects.filter(scope_id=scope_id).select_related("author")
        ]
        folded = status.derive(records, share_percent=share_percent())
        for fact in Fact.objects.filter(pk__in={r.fact_id for r in records}):
            assert fact_status(fact) == folded.status_of(fact.pk)
    # The flooding account is over its cap in the scopes after the first.
    flooded = Record.objects.filter(scope_id=store.scope_ids[1], author__username="bench-flooder")
    assert flooded.exists()
    usage = folded_usage(store.scope_ids[1], "bench-flooder")
    assert usage.queued and len(usage.in_effect) == usage.cap


def folded_usage(scope_id, username):
    records = [
        status.PlainRecord(
            id=r.id,
            fact_id=r.fact_id,
            role=r.role,
            author_id=r.author_id,
            inserted_at=r.inserted_at,
            verdict=r.verdict,
            evidenced=r.evidence is not None,
            challenge_id=r.challenge_id,
            author_name=r.author.username,
        )
        for r in Record.objects.filter(scope_id=scope_id).select_related("author")
    ]
    folded = status.derive(records, share_percent=share_percent())
    return next(u for u in folded.accounts.values() if u.author_name == username)


def test_truth_slots_are_what_memories_truth_computes(store):
    live_slots = set(
        Fact.objects.live()
        .filter(bucket=Bucket.SYSTEM)
        .values_list("scope_id", "subject_id", "predicate_id")
        .distinct()
    )
    stored = {(s.scope_id, s.subject_id, s.predicate_id): s for s in TruthSlot.objects.all()}
    assert set(stored) == live_slots
    conflicted = set(
        TruthSlot.objects.filter(conflict__isnull=False).values_list("pk", flat=True)[:100]
    )
    sample = [s for s in stored.values() if s.pk % 10 == 0 or s.pk in conflicted]
    predicates = {p.pk: p for p in Predicate.objects.all()}
    for slot in sample:
        spec = predicate_spec(predicates[slot.predicate_id])
        claims = load_claims(slot.scope_id, slot.subject_id, slot.predicate_id, now=generate.ANCHOR)
        outcome = decide_slot(claims, spec, now=generate.ANCHOR)
        outcome = settle(outcome, claims, min_confidence=1.0, awaiting_verdict=False)
        assert not outcome.supersessions and outcome.conflict is None
        assert slot.values == [_value_json(value) for value in outcome.values]
        assert slot.rationale == outcome.rationale
        assert slot.decided_by == outcome.decided_by
        assert slot.claim_set_hash == outcome.claim_set_hash
        expected = (
            Conflict.objects.open()
            .filter(members__fact_id__in=[c.fact_id for c in claims])
            .order_by("-opened_at", "-id")
            .values_list("pk", flat=True)
            .first()
        )
        assert slot.conflict_id == expected


def test_the_agent_token_reads_facts_and_the_write_path_goes_on(store, client):
    for fact_id in store.fact_ids[::100]:
        response = client.get(
            f"/api/v1/facts/{fact_id}", HTTP_AUTHORIZATION=f"Bearer {store.agent_token}"
        )
        assert response.status_code == 200, response.content
    for scope_id, entity_id in store.subjects[:5]:
        response = client.get(
            "/api/v1/truth",
            {
                "scope": Scope.objects.get(pk=scope_id).name,
                "subject": Entity.objects.get(pk=entity_id).name,
                "limit": 50,
            },
            HTTP_AUTHORIZATION=f"Bearer {store.agent_token}",
        )
        assert response.status_code == 200, response.content
        assert 8 <= len(response.json()["results"]) <= 20
    agent = ApiToken.objects.get(user_id=store.agent_id).user
    scope = Scope.objects.get(pk=store.scope_ids[0])
    result = assert_fact(
        actor=agent,
        data={
            "scope": scope.name,
            "subject": "a brand new service",
            "predicate": "core/uses",
            "object": "a brand new tool",
            "source_type": "code",
        },
    )
    assert result.status == "created"
    # A new version of a generated subject supersedes its generated one.
    live = (
        Fact.objects.live()
        .filter(scope=scope, bucket=Bucket.SYSTEM, predicate__name="core/has-version")
        .exclude(pk__in=ConflictMember.objects.values("fact"))
    )
    fact = live.select_related("subject").first()
    result = assert_fact(
        actor=agent,
        data={
            "scope": scope.name,
            "subject": fact.subject.name,
            "predicate": "core/has-version",
            "object": "99.0.0",
            "source_type": "code",
        },
    )
    assert result.status in {"superseded", "flagged"}


def test_one_seed_gives_one_store(store):
    first = checksum()
    with transaction.atomic():
        # Empty the store (the records are append-only: TRUNCATE is allowed
        # only where the test database says so) and generate again.
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("SET LOCAL claimgraph.allow_truncate = 'on'")
            cursor.execute(
                "TRUNCATE admissions_record, admissions_factverdict, admissions_openchallenge,"
                " admissions_scopetally, memories_truthslot, memories_conflictmember,"
                " memories_conflict, memories_auditentry, memories_crawlerrun, memories_fact,"
                " memories_entity, memories_scope_members, accounts_apitoken, memories_scope"
                " CASCADE"
            )
        from django.contrib.auth.models import User

        User.objects.filter(username__startswith="bench-").delete()
        generate.generate(FACTS, seed=0)
        assert checksum() == first
        transaction.set_rollback(True)


def checksum() -> str:
    digest = hashlib.sha256()
    rows = Fact.objects.order_by("id").values_list(
        "id",
        "scope__name",
        "subject__name",
        "predicate__name",
        "object_lit",
        "object_ref__name",
        "confidence",
        "bucket",
        "author__username",
        "t_valid",
        "t_invalid",
        "superseded_by_id",
    )
    for row in rows:
        digest.update(repr(row).encode())
    for row in Record.objects.order_by("id").values_list("id", "fact_id", "role", "inserted_at"):
        digest.update(repr(row).encode())
    return digest.hexdigest()


def derived_state() -> tuple:
    return (
        sorted(FactVerdict.objects.values_list("fact_id", "verdict", "record_id", "decided_at")),
        sorted(OpenChallenge.objects.values_list("challenge_id", "fact_id", "author_id")),
        sorted(ScopeTally.objects.values_list("scope_id", "admitted")),
    )


def test_a_checked_load_derives_the_state_the_fast_load_rebuilds():
    """With every trigger on, the admissions triggers derive what the rebuild gives."""
    generate.generate(FACTS, seed=0, checked=True)
    incremental = derived_state()
    assert incremental[0] and incremental[1] and incremental[2]
    with connection.cursor() as cursor:
        cursor.execute("SELECT admissions_rebuild_state()")
    assert derived_state() == incremental


def test_the_store_is_settled_a_crawler_pass_and_recomputes_change_nothing(store, settings):
    # Decay depends on the real clock; the pass is asked about everything else.
    settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = 0.0
    entries, conflicts = AuditEntry.objects.count(), Conflict.objects.count()
    generated = CrawlerRun.objects.get()
    run = run_crawl()
    assert set(run.counts.values()) == {0}
    assert run.counts == generated.counts
    assert set(run.report) == set(generated.report)
    for key in ("slots walked", "slots changed", "walk"):
        assert run.report[key] == generated.report[key]
    slots = [*TruthSlot.objects.order_by("pk")[:50], *TruthSlot.objects.exclude(conflict=None)[:50]]
    for slot in slots:
        recomputed = recompute_slot(
            slot.scope_id, slot.subject_id, slot.predicate_id, now=generate.ANCHOR
        ).slot
        assert recomputed.values == slot.values
        assert recomputed.conflict_id == slot.conflict_id
    assert (AuditEntry.objects.count(), Conflict.objects.count()) == (entries, conflicts)
    # With the decay setting of the generated run, a pass has its basis: the
    # same vocabulary, settings and database.
    settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD = generated.report["decay threshold"]
    assert run_crawl(full=True).report["basis"] == generated.report["basis"]
