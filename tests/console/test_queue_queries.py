"""The queue pages, the audit feed, entities and the account page each cost a fixed number
of queries (at most 12) whatever the number of rows in the store."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.actions import issue_token
from admissions.actions import file_challenge, record_verdict
from memories.store.models import Entity
from memories.store.vocabulary import load_vocabulary
from memories.write.merges import merge_entities
from tests.console.conftest import write

pytestmark = pytest.mark.django_db

BUDGET = 12
PAGES = ["dashboard", "candidates", "challenges", "audit", "entities", "account"]


@pytest.fixture(autouse=True)
def vocabulary_held(settings):
    """The vocabulary read once and kept, so that its reads fall in neither measurement."""
    settings.CLAIMGRAPH_VOCABULARY_CACHE_SECONDS = 3600
    load_vocabulary()


@pytest.fixture(autouse=True)
def tokens_uncapped(settings):
    """The pages are measured with 40 tokens on one account, past the default cap."""
    settings.CLAIMGRAPH_MAX_TOKENS_PER_ACCOUNT = 0


def grow(steward, member, author, start: int, stop: int) -> None:
    """Rows of every kind the pages list: candidates, conflicts, verdicts, challenges,
    audit entries, entities with merges, and API tokens."""
    for i in range(start, stop):
        standing = write(steward, f"svc-{i:03}", "core/has-version", "1.0", "code").fact
        write(member, f"svc-{i:03}", "core/has-version", "2.0", "agent-note")
        write(member, f"lib-{i:03}", "core/uses", f"tool-{i}", "session-log")
        record_verdict(actor=steward, fact_id=standing.pk, verdict="admitted", ground="ok")
        challenger = member if i % 2 else author
        file_challenge(actor=challenger, fact_id=standing.pk, ground="no", evidence=["x"])
        if i % 3 == 0:
            merge_entities(
                actor=steward,
                entity_id=Entity.objects.get(name=f"lib-{i:03}").pk,
                into_id=Entity.objects.get(name=f"svc-{i:03}").pk,
                reason="same thing",
            )
        issue_token(actor=steward, name=f"agent-{i}")


def queries(client, name: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse(name), {"per_page": 100})
    assert response.status_code == 200, name
    return len(captured)


def test_each_queue_page_makes_as_many_queries_for_many_rows_as_for_few(
    as_steward, steward, member, author
):
    grow(steward, member, author, 0, 3)
    few = {name: queries(as_steward, name) for name in PAGES}
    grow(steward, member, author, 3, 40)
    many = {name: queries(as_steward, name) for name in PAGES}
    assert many == few
    assert {name: count for name, count in many.items() if count > BUDGET} == {}


def test_a_members_pages_make_as_many_queries_for_many_rows_as_for_few(
    as_member, steward, member, author
):
    pages = [name for name in PAGES if name != "candidates"]  # stewards only
    grow(steward, member, author, 0, 3)
    few = {name: queries(as_member, name) for name in pages}
    grow(steward, member, author, 3, 40)
    many = {name: queries(as_member, name) for name in pages}
    assert many == few
    assert {name: count for name, count in many.items() if count > BUDGET} == {}
