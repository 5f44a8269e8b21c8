"""The API's lists make the same number of queries whatever their page size (no N+1).

Each list is read at a page of 5 and a page of 50 results; the counts must be
equal, and at most the constant named beside each list.
"""

import psycopg
import pytest

from admissions.actions import file_challenge, record_verdict, refute_challenge
from memories.store.vocabulary import load_vocabulary
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db

ROWS = 55
SMALL, LARGE = 5, 50

# The statements of one page, whatever its size, for a member and for a global
# steward: who the caller is (the token) and what they may read (the account's
# roles), the scope, the page's rows, and what every row shows (the facts'
# statuses, their disputed flags, a conflict's members) read once for the whole
# page. Counted at psycopg, so the prepared statements run on psycopg's own
# cursors count too (Django's query capture sees only its own cursors).
TRUTH_QUERIES = {"member": 5, "steward": 5}
CONFLICT_QUERIES = {"member": 7, "steward": 7}
RECORD_QUERIES = {"member": 4, "steward": 4}


@pytest.fixture(autouse=True)
def vocabulary_held(settings):
    """The vocabulary read once and kept, so that no count includes its reads."""
    settings.CLAIMGRAPH_VOCABULARY_CACHE_SECONDS = 3600
    load_vocabulary()


@pytest.fixture
def crowd(member, steward, author):
    """55 slots, each with an admitted fact outranked by a note (an open conflict)."""
    standing = []
    for i in range(ROWS):
        fact = assert_fact(
            actor=steward, data=fact_body(subject=f"svc-{i:02}", confidence=0.95)
        ).fact
        assert_fact(
            actor=member,
            data=fact_body(subject=f"svc-{i:02}", object="3.0.0", source_type="agent-note"),
        )
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="ok")
        standing.append(fact)
    return standing


@pytest.fixture(params=["member", "steward"])
def reader(request, agent_for):
    """(role, agent): a member of the scope, or a global steward."""
    agent = agent_for(request.getfixturevalue(request.param))
    # One request first, so no count includes what a process reads once.
    agent.get("/truth", scope="project", limit=1)
    return request.param, agent


def queries(agent, path: str, **params) -> tuple[int, dict]:
    sent = []
    # Every cursor's execute is psycopg.Cursor's (a client cursor inherits it).
    originals = {
        cls: cls.__dict__["execute"]
        for cls in (psycopg.Cursor, psycopg.ClientCursor)
        if "execute" in cls.__dict__
    }

    def counting(original):
        def execute(cursor, *args, **kwargs):
            sent.append(args[0] if args else kwargs.get("query"))
            return original(cursor, *args, **kwargs)

        return execute

    try:
        for cls, original in originals.items():
            cls.execute = counting(original)
        response = agent.get(path, **params)
    finally:
        for cls, original in originals.items():
            cls.execute = original
    assert response.status_code == 200, response.content
    return len(sent), response.json()


def test_truth_makes_the_same_queries_for_5_and_50_facts(crowd, reader):
    role, agent = reader
    small, small_body = queries(agent, "/truth", scope="project", limit=SMALL)
    large, large_body = queries(agent, "/truth", scope="project", limit=LARGE)
    assert (len(small_body["results"]), len(large_body["results"])) == (SMALL, LARGE)
    assert small == large == TRUTH_QUERIES[role]


def test_conflicts_make_the_same_queries_for_5_and_50_conflicts(crowd, reader):
    role, agent = reader
    small, small_body = queries(agent, "/conflicts", scope="project", limit=SMALL)
    large, large_body = queries(agent, "/conflicts", scope="project", limit=LARGE)
    assert (len(small_body["results"]), len(large_body["results"])) == (SMALL, LARGE)
    assert all(len(conflict["facts"]) == 2 for conflict in large_body["results"])
    assert small == large == CONFLICT_QUERIES[role]


def test_records_make_the_same_queries_for_5_and_50_records(member, steward, reader):
    fact = assert_fact(actor=steward, data=fact_body()).fact
    record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="ok")
    for i in range(ROWS):
        challenger = member if i % 2 else steward
        filed = file_challenge(
            actor=challenger, fact_id=fact.pk, ground=f"doubt {i}", evidence=None
        )
        # Answered before the next: one open challenge per account and fact.
        refute_challenge(actor=steward, challenge_id=filed.pk, ground=f"answered {i}")
    path = f"/facts/{fact.pk}/records"
    role, agent = reader
    small, small_body = queries(agent, path, limit=SMALL)
    large, large_body = queries(agent, path, limit=LARGE)
    assert (len(small_body["results"]), len(large_body["results"])) == (SMALL, LARGE)
    assert small == large == RECORD_QUERIES[role]
