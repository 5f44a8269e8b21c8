"""The facts browser, the fact page and the subject page each read in a fixed number of queries.

Each page is counted on a small store and again on one several times larger
in everything the page shows: facts, supersession chains, records, conflicts,
receipts, merges. The count must not move, and stays within the console's
budget of 12.
"""

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from admissions.actions import file_challenge, record_verdict
from memories.store.lookups import find_entity
from memories.store.models import Entity, Scope
from memories.store.vocabulary import load_vocabulary
from memories.write.actions import record_outcome
from memories.write.merges import merge_entities
from tests.conftest import at
from tests.console.conftest import signed_in, write

pytestmark = pytest.mark.django_db

BUDGET = 12


@pytest.fixture(autouse=True)
def vocabulary_held(settings):
    """The vocabulary read once and kept, so that its expiry never lands in one count only."""
    settings.CLAIMGRAPH_VOCABULARY_CACHE_SECONDS = 3600
    load_vocabulary()


def queries(client, url: str, **params) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params)
    assert response.status_code == 200
    return len(captured)


class Store:
    """A store that grows in everything the three pages show, ``grow(n)`` rounds at a time."""

    def __init__(self, steward, member) -> None:
        self.steward, self.member = steward, member
        self.rounds = 0
        self.version = None  # the newest version of the ledger's one slot

    def grow(self, rounds: int) -> None:
        for _ in range(rounds):
            n = self.rounds
            self.rounds += 1
            day = at("2026-01-01T09:00").replace(day=1 + n % 28, month=1 + n // 28)
            # One more link of the supersession chain, admitted.
            self.version = write(
                self.steward, "ledger", "core/has-version", f"{n}.0", "code", now=day
            ).fact
            record_verdict(
                actor=self.steward, fact_id=self.version.pk, verdict="admitted", ground="seen"
            )
            # More facts about the subject: a candidate, a rejected one, a private one.
            write(self.member, "ledger", "core/uses", f"lib-{n}", "session-log", now=day)
            rejected = write(self.member, "ledger", "core/uses", f"old-{n}", "session-log").fact
            record_verdict(actor=self.steward, fact_id=rejected.pk, verdict="rejected", ground="no")
            write(self.member, "ledger", "core/prefers", f"tabs-{n}", "session-log", bucket="user")
            # Facts about other subjects, for the browser.
            write(self.member, f"svc-{n}", "core/uses", "Redis", "session-log")
            # An entity merged into the subject.
            write(self.member, f"ledger-{n}", "core/uses", "Kafka", "session-log")
            merge_entities(
                actor=self.steward,
                entity_id=self._entity(f"ledger-{n}"),
                into_id=self._entity("ledger"),
                reason="the same ledger",
            )

    def _entity(self, name: str) -> int:
        return find_entity(Scope.objects.get(name="project"), name).pk


@pytest.fixture
def store(steward, member) -> Store:
    return Store(steward, member)


def test_the_facts_browser_reads_in_as_many_queries_for_many_facts_as_for_few(
    as_steward, as_member, store
):
    store.grow(2)
    pages = [(client, filters) for client in (as_steward, as_member) for filters in FILTERS]
    few = [queries(client, reverse("facts"), per_page=100, **f) for client, f in pages]
    store.grow(8)
    shown = as_steward.get(reverse("facts"), {"per_page": 100}).context["page"]
    assert len(shown.object_list) > 50
    many = [queries(client, reverse("facts"), per_page=100, **f) for client, f in pages]
    assert many == few
    assert max(many) <= BUDGET


FILTERS = [
    {},
    {"q": "ledger"},
    {"subject": "ledger"},
    {"status": "admitted"},
    {"status": "disputed"},
    {"status": "superseded"},
    {"scope": "project", "predicate": "core/uses", "bucket": "system"},
]


def challenger(scope: Scope, n: int):
    """The ``n``th challenger, a member of ``scope``."""
    user, _ = User.objects.get_or_create(username=f"challenger-{n}")
    scope.members.add(user)
    return user


def history(steward, member, author, subject: str, length: int):
    """A fact at the end of a chain of ``length`` versions, with ``length`` of each thing
    its page lists: challenges (evidenced or not), receipts and conflicts."""
    for n in range(length):
        day = at("2026-01-01T09:00").replace(day=1 + n)
        fact = write(steward, subject, "core/has-version", f"{n}.0", "code", now=day).fact
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="seen")
    for n in range(length):
        file_challenge(
            # One open challenge per account and fact: an account of its own for each.
            actor=challenger(fact.scope, n),
            fact_id=fact.pk,
            ground=f"wrong {n}",
            evidence=[f"ticket-{n}"] if n % 3 else None,
        )
        record_outcome(actor=member, fact_ids=[fact.pk])
        write(member, subject, "core/has-version", f"9.{n}", "agent-note")
    return fact


def test_the_fact_page_reads_in_as_many_queries_for_long_histories_as_for_short_ones(
    as_steward, as_member, steward, member, author
):
    clients = (as_steward, as_member, signed_in(author))
    short = history(steward, member, author, "ledger", 2)
    long = history(steward, member, author, "journal", 14)
    page = as_steward.get(reverse("fact", args=[long.pk])).context
    assert len(page["chain"]) == 14
    assert len(page["records"]) > 14
    assert len(page["memberships"]) == 14
    assert len(page["receipts"]) == 14
    counts = [queries(client, reverse("fact", args=[short.pk])) for client in clients]
    assert [queries(client, reverse("fact", args=[long.pk])) for client in clients] == counts
    assert max(counts) <= BUDGET


def test_a_middle_link_of_the_chain_reads_both_ways_in_the_same_queries(as_steward, store):
    store.grow(3)
    first = as_steward.get(reverse("fact", args=[store.version.pk])).context["chain"][1]
    few = queries(as_steward, reverse("fact", args=[first.pk]))
    store.grow(10)
    assert len(as_steward.get(reverse("fact", args=[first.pk])).context["chain"]) == 13
    assert queries(as_steward, reverse("fact", args=[first.pk])) == few
    assert few <= BUDGET


def test_the_subject_page_reads_in_as_many_queries_for_many_facts_as_for_few(
    as_steward, as_member, store
):
    store.grow(2)
    url = reverse("subject", args=[store.version.subject_id])
    few = [queries(client, url) for client in (as_steward, as_member)]
    store.grow(10)
    response = as_steward.get(url)
    assert len(response.context["pending"]) > 20
    assert len(response.context["merged_here"]) == 12
    assert [queries(client, url) for client in (as_steward, as_member)] == few
    assert max(few) <= BUDGET


def test_a_merged_subject_page_reads_in_a_fixed_number_of_queries(as_steward, store):
    store.grow(2)
    merged = Entity.objects.get(key="ledger-0").pk
    few = queries(as_steward, reverse("subject", args=[merged]))
    store.grow(8)
    assert queries(as_steward, reverse("subject", args=[merged])) == few
    assert few <= BUDGET


# Every predicate of the seeded vocabulary: one slot each (or one per exclusion group).
PREDICATES = [
    "core/uses",
    "core/has-version",
    "core/avoids",
    "core/depends-on",
    "core/deployed-via",
    "core/owned-by",
    "core/works-at",
    "core/prefers",
]


def test_the_subject_page_reads_in_as_many_queries_for_many_slots_as_for_two(
    as_steward, as_member, steward, member
):
    def slots(predicates, versions: int) -> None:
        for predicate in predicates:
            for n in range(versions):
                day = at("2026-01-01T09:00").replace(day=1 + n)
                write(steward, "atlas", predicate, f"{predicate}-{n}", "code", now=day)

    slots(PREDICATES[:2], 2)
    entity = find_entity(Scope.objects.get(name="project"), "atlas").pk
    url = reverse("subject", args=[entity])
    few = [queries(client, url) for client in (as_steward, as_member)]
    assert len(as_steward.get(url).context["pictures"]) == 2
    slots(PREDICATES[2:], 4)
    pictures = as_steward.get(url).context["pictures"]
    assert len(pictures) >= 6
    assert sum(len(p.timeline.bars) for p in pictures) > 20
    assert [queries(client, url) for client in (as_steward, as_member)] == few
    assert max(few) <= BUDGET
