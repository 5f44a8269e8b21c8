"""Review claims (SPEC §9): a steward's note that they review an item, expiring, not a lock."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction

from admissions.actions import record_verdict
from memories.store.errors import Forbidden, NotFound, Rejected, StateConflict
from memories.store.models import ReviewClaim
from memories.write.actions import assert_fact, resolve_conflict
from memories.write.claims import claim_item, release_claim
from tests.conftest import at, make_user
from tests.racing import race

NOW = at("2026-06-01T12:00")


def write(actor, subject, predicate, obj, source, **extra):
    data = {
        "scope": "project",
        "subject": subject,
        "predicate": predicate,
        "object": obj,
        "source_type": source,
        **extra,
    }
    return assert_fact(actor=actor, data=data, now=at("2026-05-01T09:00"))


@pytest.fixture
def conflict(steward, member):
    write(steward, "AuthService", "core/has-version", "2.0.0", "code")
    return write(member, "AuthService", "core/has-version", "3.0.0", "agent-note").conflict


@pytest.fixture
def candidate(member):
    return write(member, "shoply", "core/uses", "Redis", "session-log").fact


@pytest.mark.django_db
def test_a_claim_lasts_the_settings_minutes_and_says_who_and_until(settings, steward, conflict):
    settings.CLAIMGRAPH_CLAIM_MINUTES = 20
    claim = claim_item(actor=steward, conflict_id=conflict.pk, now=NOW)
    assert claim.expires_at == NOW + timedelta(minutes=20)
    assert claim.note == "being reviewed by stella (until 12:20)"
    assert list(ReviewClaim.objects.active(NOW + timedelta(minutes=19))) == [claim]
    assert not ReviewClaim.objects.active(NOW + timedelta(minutes=20)).exists()


@pytest.mark.django_db
def test_another_stewards_live_claim_is_refused_naming_them(steward, scope_steward, conflict):
    claim_item(actor=steward, conflict_id=conflict.pk, now=NOW)
    with pytest.raises(StateConflict, match="being reviewed by stella"):
        claim_item(actor=scope_steward, conflict_id=conflict.pk, now=NOW + timedelta(minutes=1))
    assert ReviewClaim.objects.get().claimed_by == steward


@pytest.mark.django_db
def test_an_expired_claim_is_replaced_and_the_holder_renews_their_own(
    steward, scope_steward, candidate
):
    first = claim_item(actor=steward, fact_id=candidate.pk, now=NOW)
    renewed = claim_item(actor=steward, fact_id=candidate.pk, now=NOW + timedelta(minutes=5))
    assert renewed.pk == first.pk
    assert renewed.expires_at == NOW + timedelta(minutes=20)
    taken = claim_item(actor=scope_steward, fact_id=candidate.pk, now=NOW + timedelta(hours=1))
    assert taken.claimed_by == scope_steward
    assert ReviewClaim.objects.count() == 1


@pytest.mark.django_db
def test_only_the_claimer_releases(steward, scope_steward, conflict):
    claim_item(actor=steward, conflict_id=conflict.pk, now=NOW)
    with pytest.raises(StateConflict, match="only they can release"):
        release_claim(actor=scope_steward, conflict_id=conflict.pk, now=NOW)
    assert release_claim(actor=steward, conflict_id=conflict.pk, now=NOW) is True
    assert not ReviewClaim.objects.exists()
    assert release_claim(actor=steward, conflict_id=conflict.pk, now=NOW) is False


@pytest.mark.django_db
def test_members_are_refused_and_outsiders_see_nothing(member, outsider, conflict, candidate):
    with pytest.raises(Forbidden):
        claim_item(actor=member, conflict_id=conflict.pk)
    with pytest.raises(Forbidden):
        release_claim(actor=member, fact_id=candidate.pk)
    with pytest.raises(NotFound):
        claim_item(actor=outsider, conflict_id=conflict.pk)
    with pytest.raises(NotFound):
        claim_item(actor=outsider, fact_id=candidate.pk)
    inactive = make_user("gone", is_active=False)
    with pytest.raises(NotFound):
        claim_item(actor=inactive, fact_id=candidate.pk)
    assert not ReviewClaim.objects.exists()


@pytest.mark.django_db
def test_a_private_fact_is_not_claimed(steward, member):
    private = write(member, "mira", "core/prefers", "tea", "user-assertion", bucket="user").fact
    with pytest.raises(Rejected, match="system"):
        claim_item(actor=steward, fact_id=private.pk)


@pytest.mark.django_db
def test_a_claim_names_exactly_one_item_in_the_database(steward, conflict, candidate, scope):
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewClaim.objects.create(
            scope=scope,
            conflict=conflict,
            fact=candidate,
            claimed_by=steward,
            claimed_at=NOW,
            expires_at=NOW + timedelta(minutes=1),
        )


@pytest.mark.django_db
def test_a_ruling_ends_the_claim(steward, scope_steward, conflict, candidate):
    # Another steward may still act on a claimed item: a claim is a note, not a lock.
    claim_item(actor=steward, conflict_id=conflict.pk)
    claim_item(actor=steward, fact_id=candidate.pk)
    resolve_conflict(
        actor=scope_steward, conflict_id=conflict.pk, action="dismiss", reason="a false alarm"
    )
    assert not ReviewClaim.objects.filter(conflict=conflict).exists()
    record_verdict(actor=scope_steward, fact_id=candidate.pk, verdict="admitted", ground="seen")
    assert not ReviewClaim.objects.exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_stewards_claiming_at_once_end_with_one_claim(scope, conflict):
    stewards = [make_user(f"steward-{n}", is_superuser=True) for n in range(6)]

    def attempt(user):
        try:
            return claim_item(actor=user, conflict_id=conflict.pk)
        except StateConflict as refused:
            return refused

    outcomes = race(attempt, stewards)
    won = [outcome for outcome in outcomes if isinstance(outcome, ReviewClaim)]
    assert len(won) == 1
    assert all(isinstance(outcome, StateConflict) for outcome in outcomes if outcome not in won)
    assert ReviewClaim.objects.get().claimed_by_id == won[0].claimed_by_id
