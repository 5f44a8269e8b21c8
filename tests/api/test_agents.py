"""GET /slots/history and GET /context: a slot's every version, and a digest for a prompt."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from admissions.actions import record_verdict
from memories.store.vocabulary import load_vocabulary
from memories.write.actions import assert_fact, invalidate_fact
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def vocabulary_held(settings):
    # A copy of the vocabulary expiring between two counted requests would
    # add its reads to one count and not the other.
    settings.CLAIMGRAPH_VOCABULARY_CACHE_SECONDS = 3600
    load_vocabulary()


def write(actor, **fields):
    return assert_fact(actor=actor, data=fact_body(**fields))


def admitted(steward, result):
    record_verdict(actor=steward, fact_id=result.fact.pk, verdict="admitted", ground="checked")
    return result.fact


# --- slot history ------------------------------------------------------------------


def test_slot_history_lists_every_version_oldest_first_with_how_each_ended(
    member, steward, agent_for
):
    first = write(steward, object="1.0").fact
    second = write(steward, object="2.0").fact  # supersedes 1.0
    invalidate_fact(actor=steward, fact_id=second.pk, reason="rolled back")
    third = write(steward, object="3.0", t_invalid="2099-01-01T00:00:00Z").fact
    write(steward, subject="Other", object="9.9")  # another slot

    body = (
        agent_for(member)
        .get("/slots/history", scope="project", subject="authservice", predicate="core/has-version")
        .json()
    )
    assert body["next"] is None
    assert [version["id"] for version in body["results"]] == [
        str(first.pk),
        str(second.pk),
        str(third.pk),
    ]
    first_end, second_end, third_end = (version["ended"] for version in body["results"])
    assert first_end["how"] == "superseded"
    assert first_end["superseded_by"] == str(second.pk)
    assert first_end["by"] == steward.username
    assert second_end["how"] == "invalidated"
    assert second_end["reason"] == "rolled back"
    assert third_end == {
        "how": "bounded",
        "at": "2099-01-01T00:00:00+00:00",
        "recorded_at": None,
        "by": None,
        "superseded_by": None,
        "reason": "",
    }
    # The Fact shape, with its admission status.
    assert body["results"][0]["admission"]["status"] == "candidate"


def test_slot_history_of_a_stance_brings_the_whole_exclusion_group(member, agent_for):
    write(
        member,
        subject="api-layer",
        predicate="core/decided-against",
        object="GraphQL",
        source_type="decision-record",
        epistemic="commitment",
    )
    write(
        member,
        subject="api-layer",
        predicate="core/prefers",
        object="GraphQL",
        source_type="session-log",
    )
    body = (
        agent_for(member)
        .get("/slots/history", scope="project", subject="api-layer", predicate="core/prefers")
        .json()
    )
    assert [(v["predicate"], v["ended"]["how"]) for v in body["results"]] == [
        ("core/decided-against", "live"),
        ("core/prefers", "live"),
    ]
    assert body["results"][1]["disputed"] is True


def test_slot_history_pages_with_a_cursor(member, agent_for):
    for version in range(5):
        write(member, object=f"{version}.0")
    agent = agent_for(member)
    query = {"scope": "project", "subject": "AuthService", "predicate": "core/has-version"}
    first = agent.get("/slots/history", **query, limit=3).json()
    rest = agent.get("/slots/history", **query, limit=3, cursor=first["next"]).json()
    objects = [v["object"] for v in first["results"] + rest["results"]]
    assert objects == ["0.0", "1.0", "2.0", "3.0", "4.0"]
    assert rest["next"] is None


def test_slot_history_of_another_scope_answers_as_a_missing_one(
    member, outsider, agent_for, anonymous
):
    write(member, object="1.0")
    query = {"scope": "project", "subject": "AuthService", "predicate": "core/has-version"}
    hidden = agent_for(outsider).get("/slots/history", **query)
    missing = agent_for(outsider).get("/slots/history", **{**query, "scope": "nowhere"})
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
    assert anonymous.get("/slots/history", **query).status_code == 401


def test_slot_history_leaves_out_other_authors_private_facts(member, author, agent_for):
    write(author, object="1.0", bucket="user")
    write(member, object="2.0", bucket="user")
    body = (
        agent_for(member)
        .get("/slots/history", scope="project", subject="AuthService", predicate="core/has-version")
        .json()
    )
    assert [v["object"] for v in body["results"]] == ["2.0"]


def test_slot_history_refuses_an_unknown_parameter(member, agent_for):
    response = agent_for(member).get(
        "/slots/history", scope="project", subject="a", predicate="core/uses", sort="new"
    )
    assert response.status_code == 400
    assert response.json()["field"] == "sort"


def count_queries(agent, path: str, **query) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = agent.get(path, **query)
    assert response.status_code == 200, response.content
    return len(captured)


def test_slot_history_costs_the_same_queries_for_two_versions_as_for_forty(
    member, steward, agent_for
):
    agent = agent_for(member)
    query = {"scope": "project", "subject": "AuthService", "predicate": "core/has-version"}
    for version in range(2):
        write(steward, object=f"{version}.0")
    agent.get("/slots/history", **query)  # the token's last use is recorded once a minute
    few = count_queries(agent, "/slots/history", **query)
    for version in range(2, 40):
        result = write(steward, object=f"{version}.0")
        if version % 3 == 0:
            invalidate_fact(actor=steward, fact_id=result.fact.pk, reason="no")
        if version % 4 == 0:
            admitted(steward, result)
    many = count_queries(agent, "/slots/history", **query)
    assert few == many


# --- context -----------------------------------------------------------------------


@pytest.fixture
def store(member, steward):
    """Seed 000's examples 1 and 3, admitted: a commitment, a flagged stance, an outranked one."""
    commitment = admitted(
        steward,
        write(
            steward,
            subject="api-layer",
            predicate="core/decided-against",
            object="GraphQL",
            source_type="decision-record",
            epistemic="commitment",
        ),
    )
    stance = write(
        member,
        subject="api-layer",
        predicate="core/prefers",
        object="GraphQL",
        source_type="session-log",
    )
    version = admitted(steward, write(steward, object="2.0.0", confidence=0.95))
    outranked = write(member, object="3.0.0", source_type="agent-note")
    admitted(steward, write(steward, subject="shoply", predicate="core/uses", object="Postgres"))
    return {
        "commitment": commitment,
        "stance": stance.fact,
        "version": version,
        "outranked": outranked.fact,
    }


def test_context_puts_commitments_first_then_truth_each_with_what_contests_it(
    store, member, agent_for
):
    body = agent_for(member).get("/context", scope="project").json()
    markdown = body["markdown"]
    commitments = markdown.index("## Commitments")
    truth = markdown.index("## Current truth")
    assert commitments < truth
    # Every open conflict here disputes a current value: none is unknown.
    assert "## Unknown — disputed" not in markdown
    assert markdown.index('"GraphQL" (decision-record') < truth
    # The flagged stance contests the commitment, under its line.
    assert (
        '  - contested by core/prefers "GraphQL" (session-log, 0.70, disputed; commitment;'
        in markdown[commitments:truth]
    )
    # Truth by effective confidence: 2.0.0 (0.95) before Postgres (0.8).
    assert truth < markdown.index('"2.0.0"') < markdown.index('"Postgres"')
    # The standing fact stays believed, listed once; 3.0.0 contests it.
    assert f'"2.0.0" (code, 0.95; contested) fact {store["version"].pk}' in markdown
    assert (
        '  - contested by "3.0.0" (agent-note, 0.65, disputed; outranked; conflict '
        in markdown[truth:]
    )
    for fact in store.values():
        assert markdown.count(f"fact {fact.pk}\n") == 1
    assert body["shown"] == {"commitments": 1, "facts": 2, "conflicts": 2}
    assert body["omitted"] == {"commitments": 0, "facts": 0, "conflicts": 0}
    assert len(markdown) <= body["budget"] == 8_000


def test_context_serves_only_what_recall_serves(store, member, agent_for):
    # Candidates awaiting a verdict never appear as truth.
    write(member, subject="shoply", predicate="core/uses", object="Redis")
    markdown = agent_for(member).get("/context", scope="project").json()["markdown"]
    assert "Redis" not in markdown


def test_context_for_one_subject(store, member, agent_for):
    body = agent_for(member).get("/context", scope="project", subject="shoply").json()
    assert "Postgres" in body["markdown"]
    assert "AuthService" not in body["markdown"]
    assert "subject `shoply`" in body["markdown"]


def test_context_stays_within_its_budget_and_says_what_it_left_out(store, member, agent_for):
    body = agent_for(member).get("/context", scope="project", budget=400).json()
    assert len(body["markdown"]) <= 400
    assert sum(body["omitted"].values()) > 0
    assert "_Left out for the budget:" in body["markdown"]


def test_context_is_the_same_text_for_the_same_store_and_time(store, member, agent_for):
    agent = agent_for(member)
    at = (timezone.now() + timedelta(days=3)).isoformat()
    first = agent.get("/context", scope="project", as_of=at).json()["markdown"]
    second = agent.get("/context", scope="project", as_of=at).json()["markdown"]
    assert first == second
    assert f"As of {at[:19]}" in first


@pytest.mark.parametrize("budget", [0, 199, 100_001, "many"])
def test_context_refuses_a_budget_out_of_bounds(member, agent_for, budget):
    response = agent_for(member).get("/context", scope="project", budget=budget)
    assert response.status_code == 400
    assert response.json()["field"] == "budget"


def test_context_of_another_scope_answers_as_a_missing_one(store, outsider, agent_for):
    hidden = agent_for(outsider).get("/context", scope="project")
    missing = agent_for(outsider).get("/context", scope="nowhere")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()


def test_context_costs_the_same_queries_for_a_few_facts_as_for_many(
    store, member, steward, agent_for
):
    agent = agent_for(member)
    agent.get("/context", scope="project")
    few = count_queries(agent, "/context", scope="project")
    for i in range(30):
        admitted(steward, write(steward, subject=f"svc-{i}", object="1.0"))
        write(member, subject=f"svc-{i}", object="2.0", source_type="agent-note")
    many = count_queries(agent, "/context", scope="project")
    assert few == many
