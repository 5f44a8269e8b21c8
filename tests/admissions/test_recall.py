"""Recall serves system facts only when admitted (SPEC §5, §6)."""

from datetime import timedelta

import pytest

from admissions.actions import file_challenge, record_verdict, refute_challenge
from admissions.selectors import recall
from memories.store.errors import NotFound
from tests.admissions.conftest import write_fact
from tests.conftest import at

pytestmark = pytest.mark.django_db

T = at("2026-03-01T12:00:00")


def objects(viewer, scope, **options) -> list[str]:
    as_of = options.pop("as_of", T + timedelta(days=1))
    entries = recall(viewer=viewer, scope=scope, as_of=as_of, **options)
    return sorted(entry.fact.object_display for entry in entries)


@pytest.fixture
def facts(author):
    return {
        name: write_fact(author, name, now=T - timedelta(days=30))
        for name in ("admitted", "candidate", "rejected", "suspended", "refuted")
    }


@pytest.fixture
def ruled(facts, steward, member, author):
    for name in ("admitted", "suspended", "refuted"):
        record_verdict(
            actor=steward, fact_id=facts[name].pk, verdict="admitted", ground="ok", now=T
        )
    record_verdict(
        actor=steward, fact_id=facts["rejected"].pk, verdict="rejected", ground="no", now=T
    )
    # Two challengers: with three admitted facts each account's cap is 1.
    for name, challenger in (("suspended", member), ("refuted", author)):
        file_challenge(
            actor=challenger, fact_id=facts[name].pk, ground="wrong", evidence=["t"], now=T
        )
    [challenge] = facts["refuted"].records.filter(role="challenge")
    refute_challenge(
        actor=steward, challenge_id=challenge.pk, ground="fine", now=T + timedelta(hours=1)
    )
    return facts


def test_recall_serves_admitted_system_facts_only(ruled, member, scope):
    assert objects(member, scope) == ["admitted", "refuted"]


def test_recall_serves_a_user_fact_to_its_author_alone(ruled, author, member, scope):
    write_fact(author, "private", bucket="user", now=T - timedelta(days=30))
    assert "private" in objects(author, scope)
    assert "private" not in objects(member, scope)


def test_recall_as_known_at_reads_the_statuses_of_that_moment(ruled, member, scope):
    before_verdicts = T - timedelta(minutes=1)
    assert objects(member, scope, known_at=before_verdicts) == []
    # Between the challenge and its refutation, the refuted fact was suspended.
    assert objects(member, scope, known_at=T + timedelta(minutes=30)) == ["admitted"]
    assert objects(member, scope, known_at=T + timedelta(hours=2)) == ["admitted", "refuted"]


def test_recall_in_a_scope_the_viewer_cannot_read_is_not_found(ruled, outsider, scope):
    with pytest.raises(NotFound):
        recall(viewer=outsider, scope=scope, as_of=T)
