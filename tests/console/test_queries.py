"""Every list page issues the same number of SQL queries whatever its page size (no N+1)."""

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from admissions.actions import file_challenge, record_verdict
from memories.store.models import Scope
from memories.store.vocabulary import load_vocabulary
from memories.write.actions import record_outcome
from tests.console.conftest import write

pytestmark = pytest.mark.django_db

ROWS = 55


@pytest.fixture(autouse=True)
def vocabulary_held(settings):
    """The vocabulary read once and kept: a copy expiring between two counted requests
    (on a slow machine) would add its two reads to one of them and not the other."""
    settings.CLAIMGRAPH_VOCABULARY_CACHE_SECONDS = 3600
    load_vocabulary()


@pytest.fixture
def crowd(member, steward, author):
    """More than 50 of everything: conflicts, candidates, challenges, entities, audit entries."""
    standing_facts = []
    for i in range(ROWS):
        standing = write(steward, f"svc-{i:02}", "core/has-version", "1.0", "code").fact
        write(member, f"svc-{i:02}", "core/has-version", "2.0", "agent-note")
        record_verdict(actor=steward, fact_id=standing.pk, verdict="admitted", ground="ok")
        if i < 30:
            challenger = member if i % 2 else author
            file_challenge(actor=challenger, fact_id=standing.pk, ground="no", evidence=["x"])
        standing_facts.append(standing.pk)
    record_outcome(actor=member, fact_ids=standing_facts)


def queries(client, url: str, **params) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params)
    assert response.status_code == 200
    return len(captured)


LIST_PAGES = [
    ("conflicts", {}),
    ("conflicts", {"state": "all"}),
    ("candidates", {}),
    ("candidates", {"predicate": "core/has-version"}),
    ("challenges", {}),
    ("challenges", {"state": "all"}),
    ("facts", {}),
    ("facts", {"status": "suspended"}),
    ("facts", {"q": "svc"}),
    ("audit", {}),
    ("audit", {"who": "human"}),
    ("entities", {}),
]


def test_every_list_page_issues_as_many_queries_for_5_rows_as_for_50(as_steward, as_member, crowd):
    # One crowd for every page: building it is the slow part of this test.
    growth = {}
    for who, client in (("steward", as_steward), ("member", as_member)):
        for name, filters in LIST_PAGES:
            if who == "member" and name == "candidates":
                continue  # members are refused the candidates queue
            url = reverse(name)
            few = queries(client, url, per_page=5, **filters)
            many = queries(client, url, per_page=50, **filters)
            growth[(who, name, tuple(filters.items()))] = many - few
    assert {page: extra for page, extra in growth.items() if extra} == {}


def test_dashboard_counts_in_a_fixed_number_of_queries(
    as_steward, crowd, django_assert_max_num_queries
):
    with django_assert_max_num_queries(12):
        as_steward.get(reverse("dashboard"))


def test_conflict_and_fact_pages_stay_within_a_fixed_budget(
    as_steward, crowd, django_assert_max_num_queries
):
    from memories.store.models import Conflict

    conflict = Conflict.objects.open().first()
    with django_assert_max_num_queries(20):
        as_steward.get(reverse("conflict", args=[conflict.pk]))
    fact = conflict.facts.first()
    with django_assert_max_num_queries(25):
        as_steward.get(reverse("fact", args=[fact.pk]))


def test_detail_pages_issue_as_many_queries_for_a_long_history_as_for_a_short_one(
    as_steward, member, steward
):
    from memories.store.models import Conflict

    standing = write(steward, "svc", "core/has-version", "1.0", "code").fact
    conflict = write(member, "svc", "core/has-version", "0.9", "agent-note").conflict

    def grow(start, stop):
        for n in range(start, stop):
            # Closed history of the slot, more facts about the subject, more records.
            write(
                member,
                "svc",
                "core/has-version",
                f"0.{n}",
                "code",
                t_valid=f"2025-01-{n + 1:02}T00:00:00+00:00",
                t_invalid=f"2025-01-{n + 2:02}T00:00:00+00:00",
            )
            write(member, "svc", "core/uses", f"lib-{n}", "code")
            # One open challenge per account and fact: an account of its own for each.
            challenger, _ = User.objects.get_or_create(username=f"challenger-{n}")
            standing.scope.members.add(challenger)
            file_challenge(actor=challenger, fact_id=standing.pk, ground=f"no {n}", evidence=None)

    def measure():
        return (
            queries(as_steward, reverse("conflict", args=[conflict.pk])),
            queries(as_steward, reverse("fact", args=[standing.pk])),
            queries(as_steward, reverse("subject", args=[standing.subject_id])),
        )

    grow(0, 2)
    short = measure()
    grow(2, 20)
    assert Conflict.objects.open().count() == 1
    assert measure() == short


def test_conflicts_queue_reads_the_viewers_scopes_once_for_rows_and_filter(as_steward, crowd):
    with CaptureQueriesContext(connection) as captured:
        response = as_steward.get(reverse("conflicts"), {"scope": "project"})
    assert response.status_code == 200
    assert b'<option value="project" selected>project</option>' in response.content
    listing_scopes = [
        query["sql"]
        for query in captured
        if query["sql"].startswith('SELECT "memories_scope"."id", "memories_scope"."name"')
        # (checking the chosen scope reads that one scope by name)
        and '"memories_scope"."name" = ' not in query["sql"]
    ]
    assert len(listing_scopes) == 1


def test_conflict_page_reads_its_scope_only_with_the_conflict(as_steward, crowd):
    from memories.store.models import Conflict

    conflict = Conflict.objects.open().first()
    with CaptureQueriesContext(connection) as captured:
        response = as_steward.get(reverse("conflict", args=[conflict.pk]))
    assert response.status_code == 200
    assert "project" in response.content.decode()
    assert not [q for q in captured if q["sql"].startswith('SELECT "memories_scope"')]


def test_the_challenges_page_issues_as_many_queries_for_challenges_in_six_scopes_as_in_one(
    as_steward, member, steward
):
    def challenged(scope_name: str, n: int) -> None:
        fact = write(steward, f"svc-{n}", "core/has-version", "1.0", "code", scope=scope_name).fact
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="ok")
        # A fresh account object: the scopes it reads are remembered on it.
        challenger = type(member).objects.get(pk=member.pk)
        file_challenge(actor=challenger, fact_id=fact.pk, ground="no", evidence=["x"])

    challenged("project", 0)
    one = queries(as_steward, reverse("challenges"))
    for n in range(1, 6):
        Scope.objects.create(name=f"team-{n}").members.add(member, steward)
        challenged(f"team-{n}", n)
    assert queries(as_steward, reverse("challenges")) == one
