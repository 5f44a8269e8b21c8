"""Discovery (issue 31 §2): an agent learns its scopes and the vocabulary without guessing.

``GET /scopes`` and ``GET /vocabulary`` over the JSON API, and the MCP tools
``list_scopes`` and ``vocabulary`` with the SDK's own client against a live
server, which answer the same bodies.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from admissions.actions import record_verdict
from memories.store.models import Predicate, Scope, SourceType
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body
from tests.api.mcp_client import body, call_http
from tests.conftest import make_user

# The real roles: which source types each role may claim is part of the answer.
REAL_SOURCE_ROLES = True

SEEDED_PREDICATES = {
    "core/prefers",
    "core/decided-against",
    "core/avoids",
    "core/has-version",
    "core/deployed-via",
    "core/uses",
    "core/depends-on",
    "core/owned-by",
    "core/works-at",
}


def by_name(results: list[dict]) -> dict[str, dict]:
    return {item["name"]: item for item in results}


# --- scopes --------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_member_sees_their_scopes_with_role_sources_and_counts(
    agent_for, member, steward, outsider, other_scope
):
    scope = Scope.objects.get(name="project")
    scope.members.add(steward)
    # Three shared facts in the scope: one admitted, two waiting for a verdict,
    # one of which is flagged against the admitted one (an open conflict).
    standing = assert_fact(actor=steward, data=fact_body(confidence=0.95)).fact
    record_verdict(actor=steward, fact_id=standing.pk, verdict="admitted", ground="in the code")
    assert_fact(actor=member, data=fact_body(object="3.0.0", source_type="agent-note"))
    assert_fact(actor=member, data=fact_body(subject="Billing", source_type="session-log"))
    # Another account's private fact is not the member's to count.
    assert_fact(actor=steward, data=fact_body(subject="Secret", bucket="user"))
    # The outsider's scope holds a fact too; it never shows.
    assert_fact(actor=outsider, data=fact_body(scope="elsewhere", source_type="agent-note"))

    response = agent_for(member).get("/scopes")
    assert response.status_code == 200
    answer = response.json()
    assert answer["next"] is None
    assert [item["name"] for item in answer["results"]] == ["project"]
    mine = answer["results"][0]
    assert mine["role"] == "member"
    assert mine["source_types"] == ["user-assertion", "session-log", "agent-note"]
    assert mine["counts"] == {"live_facts": 3, "open_conflicts": 1, "waiting_candidates": 2}


@pytest.mark.django_db
def test_a_steward_is_told_their_role_and_may_claim_every_source(agent_for, steward, scope):
    Scope.objects.create(name="another")
    answer = agent_for(steward).get("/scopes").json()
    # A global steward reads every scope.
    assert [item["name"] for item in answer["results"]] == ["another", "project"]
    for item in answer["results"]:
        assert item["role"] == "steward"
        assert item["source_types"] == list(
            SourceType.objects.order_by("-trust_rank", "name").values_list("name", flat=True)
        )


@pytest.mark.django_db
def test_a_scope_steward_is_a_steward_only_in_that_scope(agent_for, scope_steward, other_scope):
    other_scope.members.add(scope_steward)
    answer = by_name(agent_for(scope_steward).get("/scopes").json()["results"])
    assert answer["project"]["role"] == "steward"
    assert answer["elsewhere"]["role"] == "member"


@pytest.mark.django_db
def test_an_outsider_sees_nothing_of_a_scope_it_does_not_belong_to(agent_for, outsider, member):
    assert_fact(actor=member, data=fact_body(source_type="agent-note"))
    answer = agent_for(outsider).get("/scopes").json()
    assert [item["name"] for item in answer["results"]] == ["elsewhere"]
    assert answer["results"][0]["counts"] == {
        "live_facts": 0,
        "open_conflicts": 0,
        "waiting_candidates": 0,
    }


@pytest.mark.django_db
def test_the_scopes_cost_the_same_queries_for_one_scope_as_for_many(agent_for, db, settings):
    # Neither the vocabulary's copy nor the token's last use is read or
    # written again within the test (both are kept for a while by design).
    settings.CLAIMGRAPH_VOCABULARY_CACHE_SECONDS = 3_600
    user = make_user("many")
    agent = agent_for(user)
    Scope.objects.create(name="s0").members.add(user)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert agent.get("/scopes").status_code == 200
        return len(captured)

    queries()
    one = queries()
    assert one <= 4
    for number in range(1, 6):
        scope = Scope.objects.create(name=f"s{number}")
        scope.members.add(user)
        assert_fact(actor=user, data=fact_body(scope=scope.name, source_type="agent-note"))
    assert queries() == one


@pytest.mark.django_db
def test_scopes_are_paged_by_name_with_a_cursor(agent_for, db):
    user = make_user("pager")
    for name in ("a1", "a2", "a3"):
        Scope.objects.create(name=name).members.add(user)
    agent = agent_for(user)
    first = agent.get("/scopes", limit=2).json()
    assert [item["name"] for item in first["results"]] == ["a1", "a2"]
    second = agent.get("/scopes", limit=2, cursor=first["next"]).json()
    assert [item["name"] for item in second["results"]] == ["a3"]
    assert second["next"] is None
    refused = agent.get("/scopes", cursor="forged")
    assert (refused.status_code, refused.json()["field"]) == (400, "cursor")


@pytest.mark.django_db
def test_discovery_needs_a_token(anonymous):
    assert anonymous.get("/scopes").status_code == 401
    assert anonymous.get("/vocabulary").status_code == 401


# --- vocabulary ----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_vocabulary_lists_predicates_sources_and_classes(agent_for, member):
    answer = agent_for(member).get("/vocabulary").json()
    predicates = by_name(answer["predicates"])
    assert predicates.keys() >= SEEDED_PREDICATES
    assert predicates["core/prefers"] | {"description": ""} == {
        "name": "core/prefers",
        "cardinality": "many",
        "exclusion_group": "stance",
        "policy": predicates["core/prefers"]["policy"],
        "default_epistemic": "preference",
        "event_like": False,
        "description": "",
    }
    assert predicates["core/has-version"]["cardinality"] == "one"
    assert predicates["core/has-version"]["exclusion_group"] is None
    sources = answer["source_types"]
    assert sources[0]["trust_rank"] >= sources[-1]["trust_rank"]
    session = by_name(sources)["session-log"]
    assert session == {
        "name": "session-log",
        "trust_rank": 2,
        "low_trust": True,
        "confidence_ceiling": 0.7,
        "decays": True,
    }
    assert [c["name"] for c in answer["epistemic_classes"]] == [
        "observation",
        "preference",
        "commitment",
    ]
    assert all(c["description"] for c in answer["epistemic_classes"])
    assert answer["object_kinds"] == ["literal", "entity"]
    assert answer["buckets"] == ["system", "user"]
    assert answer["trusted_rank"] == 3


@pytest.mark.django_db
def test_a_predicate_an_admin_adds_is_in_the_vocabulary_at_once(agent_for, member):
    agent = agent_for(member)
    agent.get("/vocabulary")  # the process's copy of the vocabulary is read
    Predicate.objects.create(
        name="team/on-call",
        cardinality="one",
        default_epistemic="observation",
        policy="supersede",
        description="Who answers the pager this week.",
    )
    from memories.store.vocabulary import forget_vocabulary

    forget_vocabulary()  # what the admin's save does for its own process
    predicates = by_name(agent.get("/vocabulary").json()["predicates"])
    assert predicates["team/on-call"]["description"] == "Who answers the pager this week."


@pytest.mark.django_db
def test_the_vocabulary_refuses_parameters_it_does_not_take(agent_for, member):
    response = agent_for(member).get("/vocabulary", scope="project")
    assert (response.status_code, response.json()["field"]) == (400, "scope")


# --- over MCP, with the SDK's client ---------------------------------------------------


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_an_agent_learns_its_scopes_and_vocabulary_over_mcp(site, agent_for, member):
    from accounts.actions import issue_token

    _, secret = issue_token(actor=member, name="agent")
    assert_fact(actor=member, data=fact_body(source_type="agent-note"))
    scopes = call_http(f"{site}/mcp/", secret, "list_scopes", {})
    assert not scopes.is_error
    listed = body(scopes)["results"]
    assert [(item["name"], item["role"]) for item in listed] == [("project", "member")]
    assert listed[0]["source_types"] == ["user-assertion", "session-log", "agent-note"]
    assert listed[0]["counts"]["live_facts"] == 1
    vocabulary = call_http(f"{site}/mcp/", secret, "vocabulary", {})
    assert not vocabulary.is_error
    assert {p["name"] for p in body(vocabulary)["predicates"]} >= SEEDED_PREDICATES
    refused = call_http(f"{site}/mcp/", secret, "vocabulary", {"colour": "red"})
    assert refused.is_error
    assert body(refused)["field"] == "colour"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_every_bad_argument_and_the_clamp_are_answered_over_mcp(site, member):
    from accounts.actions import issue_token

    _, secret = issue_token(actor=member, name="agent")
    refused = call_http(
        f"{site}/mcp/",
        secret,
        "assert_fact",
        fact_body(predicate="core/likes", source_type="rumour", confidence=1.5),
    )
    assert refused.is_error
    answer = body(refused)
    assert answer["code"] == "invalid"
    assert [error["field"] for error in answer["errors"]] == [
        "predicate",
        "source_type",
        "confidence",
    ]
    clamped = call_http(
        f"{site}/mcp/",
        secret,
        "assert_fact",
        fact_body(subject="Billing", source_type="agent-note", confidence=0.99),
    )
    assert not clamped.is_error
    assert body(clamped)["confidence_clamped"] == {
        "asked": 0.99,
        "ceiling": 0.65,
        "ceiling_of": "agent-note",
    }
