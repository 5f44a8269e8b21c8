"""The console's one-statement reads give what the general selectors give."""

import pytest

from admissions.actions import file_challenge, record_verdict, refute_challenge
from admissions.selectors import (
    fact_records,
    fact_status,
    fact_status_and_records,
    fact_statuses,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def histories(world, steward, member):
    """Facts with no record, a verdict, and verdicts, challenges and a refutation."""
    plain, busy = world.candidates[0], world.admitted
    first = file_challenge(
        actor=member, fact_id=busy.pk, ground="outdated", evidence=[{"ref": "CHANGELOG.md"}]
    )
    refute_challenge(actor=steward, challenge_id=first.pk, ground="still true")
    file_challenge(
        actor=member,
        fact_id=busy.pk,
        ground="wrong again",
        evidence=[{"ref": "release-notes", "quote": "3.0.0 released"}],
    )
    file_challenge(actor=steward, fact_id=busy.pk, ground="no evidence at all", evidence=None)
    record_verdict(
        actor=steward, fact_id=world.candidates[1].pk, verdict="rejected", ground="not so"
    )
    return [plain, busy, world.candidates[1], world.newcomer]


def test_fact_statuses_are_each_facts_status(histories):
    statuses = fact_statuses(histories)
    assert statuses == {fact.pk: fact_status(fact) for fact in histories}
    assert statuses[histories[1].pk].status == "suspended"


def test_fact_status_and_records_are_the_status_and_the_history_oldest_first(histories):
    for fact in histories:
        status, records = fact_status_and_records(fact)
        assert status == fact_status(fact)
        expected = list(fact_records(fact))
        assert [r.pk for r in records] == [r.pk for r in expected]
        for got, want in zip(records, expected, strict=True):
            assert (got.role, got.verdict, got.ground, got.evidence, got.challenge_id) == (
                want.role,
                want.verdict,
                want.ground,
                want.evidence,
                want.challenge_id,
            )
            assert (got.inserted_at, got.author.username) == (
                want.inserted_at,
                want.author.username,
            )
    assert len(fact_status_and_records(histories[1])[1]) == 5


def test_a_user_fact_has_no_status_and_no_records(world, member):
    from .conftest import write

    private = write(member, "notes", "core/prefers", "tabs", "session-log", bucket="user").fact
    assert fact_status_and_records(private) == (None, [])
    assert fact_statuses([private]) == {}


def test_fact_page_shows_the_whole_supersession_chain_oldest_first(as_steward, steward):
    from django.urls import reverse

    from tests.conftest import at

    from .conftest import write

    versions = [
        write(steward, "ledger", "core/has-version", version, "code", now=at(when)).fact
        for version, when in [
            ("1.0", "2026-05-01T09:00"),
            ("2.0", "2026-05-02T09:00"),
            ("3.0", "2026-05-03T09:00"),
        ]
    ]
    ids = [fact.pk for fact in versions]
    for fact in versions:
        chain = as_steward.get(reverse("fact", args=[fact.pk])).context["chain"]
        assert [link.pk for link in chain] == ids
    page = as_steward.get(reverse("fact", args=[ids[1]])).content.decode()
    assert f'<a href="{reverse("fact", args=[ids[0]])}"><bdi>1.0</bdi></a>' in page
    assert "<bdi>2.0</bdi> (this fact)" in page
    assert f'<a href="{reverse("fact", args=[ids[2]])}"><bdi>3.0</bdi></a>' in page


def test_fact_page_chain_stops_at_its_limit_each_way(as_steward, steward, monkeypatch):
    from django.urls import reverse

    from console.views import facts
    from tests.conftest import at

    from .conftest import write

    versions = [
        write(
            steward, "ledger", "core/has-version", f"{n}.0", "code", now=at(f"2026-05-0{n}T09:00")
        ).fact.pk
        for n in range(1, 8)
    ]
    monkeypatch.setattr(facts, "CHAIN_LIMIT", 2)
    chain = as_steward.get(reverse("fact", args=[versions[3]])).context["chain"]
    assert [link.pk for link in chain] == versions[1:6]


def _chain_link_by_link(fact, limit):
    """The ORM twin of ``supersession_chain``: one query per link, each way."""
    from memories.store.models import Fact

    before, current = [], fact
    while len(before) < limit:
        replaced = Fact.objects.filter(superseded_by=current).order_by("recorded_at", "id").first()
        if replaced is None:
            break
        before.insert(0, replaced)
        current = replaced
    after, current = [], fact
    while len(after) < limit and current.superseded_by_id is not None:
        current = Fact.objects.get(pk=current.superseded_by_id)
        after.append(current)
    return [*before, fact, *after]


@pytest.mark.parametrize("limit", [1, 2, 25])
def test_the_supersession_chain_is_its_link_by_link_walk(steward, limit):
    from memories.reads.selectors import supersession_chain
    from memories.store.models import Fact
    from tests.conftest import at

    from .conftest import write

    versions = [
        write(
            steward, "ledger", "core/has-version", f"{n}.0", "code", now=at(f"2026-05-0{n}T09:00")
        ).fact
        for n in range(1, 7)
    ]
    # A branch: a fact recorded later that the fourth version superseded too
    # (an import can say so); walking back, the first recorded wins.
    stray = write(steward, "ledger", "core/uses", "stray", "code", now=at("2026-05-08T09:00"))
    Fact.objects.filter(pk=stray.fact.pk).update(superseded_by=versions[3].pk)
    alone = write(steward, "other", "core/uses", "alone", "code").fact
    for fact in [*Fact.objects.filter(pk__in=[v.pk for v in versions]), stray.fact, alone]:
        fact = Fact.objects.get(pk=fact.pk)
        got = [link.pk for link in supersession_chain(fact, limit=limit)]
        assert got == [link.pk for link in _chain_link_by_link(fact, limit)]
    assert len(supersession_chain(alone, limit=limit)) == 1
