"""docs/agents.md "An agent's first five minutes", held step by step over the JSON API."""

import pytest

from memories.write.actions import assert_fact
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db


def test_an_agent_learns_its_scope_and_vocabulary_finds_a_fact_and_gets_every_error_at_once(
    member, agent_for
):
    assert_fact(
        actor=member,
        data=fact_body(subject="api-layer", predicate="core/decided-against", object="GraphQL"),
    )
    agent = agent_for(member)

    scopes = agent.get("/scopes").json()["results"]
    assert [(found["name"], found["role"]) for found in scopes] == [("project", "member")]
    vocabulary = agent.get("/vocabulary").json()
    assert "core/has-version" in [predicate["name"] for predicate in vocabulary["predicates"]]

    found = agent.get("/search", q="graphql").json()
    assert [slot["subject"] for slot in found["results"]] == ["api-layer"]

    missing = agent.get("/truth", scope="project", subject="api-layr")
    assert missing.status_code == 404 and missing.json()["did_you_mean"] == ["api-layer"]

    refused = agent.post(
        "/facts",
        fact_body(subject="AuthService", predicate="core/has-verison", confidence=1.5),
    )
    assert refused.status_code == 400
    problems = {problem["field"]: problem for problem in refused.json()["errors"]}
    assert set(problems) == {"predicate", "confidence"}
    assert problems["predicate"]["did_you_mean"][0] == "core/has-version"
