"""GET /api/v1/search and MCP search (issue 31 §1); "did you mean" for names a read lacks."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.actions import issue_token
from admissions.actions import record_verdict
from memories.store.models import Entity, Scope
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body
from tests.api.mcp_client import body, call_http
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def write(actor, **fields):
    return assert_fact(actor=actor, data=fact_body(**fields))


def objects(answer) -> list[str]:
    """Every fact's object in the answer, undisputed and contested, in order."""
    return [
        fact["object"]
        for slot in answer["results"]
        for fact in [*slot["values"], *(value["fact"] for value in slot["contested"])]
    ]


def scored(answer) -> list[tuple]:
    """Each slot's facts with their rank and similarity, in the answer's order."""
    return [
        (
            slot["subject"],
            slot["predicate"],
            [(fact["id"], fact["rank"], fact["similarity"]) for fact in slot["values"]],
        )
        for slot in answer["results"]
    ]


def test_an_agent_finds_a_fact_by_a_word_of_its_literal_object(member, agent_for):
    write(member, subject="shoply", predicate="core/deployed-via", object="Fly.io machines")
    write(member, subject="shoply", predicate="core/uses", object="PostgreSQL")

    answer = agent_for(member).get("/search", q="machines").json()

    assert objects(answer) == ["Fly.io machines"]
    assert answer["count"] == 1
    slot = answer["results"][0]
    assert (slot["scope"], slot["subject"], slot["predicate"]) == (
        "project",
        "shoply",
        "core/deployed-via",
    )
    assert slot["values"][0]["rank"] > 0
    assert slot["values"][0]["admission"]["status"] == "candidate"


def test_search_reads_subject_names_aliases_entity_objects_statements_and_evidence(
    member, agent_for
):
    write(member, subject="billing", predicate="core/uses", object="Stripe")
    Entity.objects.filter(name="billing").update(aliases=["payments"])
    write(
        member,
        subject="api-gateway",
        predicate="core/depends-on",
        object="billing",
        object_kind="entity",
    )
    write(member, subject="web", predicate="core/uses", object="React", statement="the frontend")
    write(
        member,
        subject="worker",
        predicate="core/uses",
        object="Celery",
        evidence=[{"ref": "ADR-12", "quote": "queues drained nightly"}],
    )
    agent = agent_for(member)

    assert objects(agent.get("/search", q="payments").json()) == ["Stripe", "billing"]
    assert objects(agent.get("/search", q="frontend").json()) == ["React"]
    assert objects(agent.get("/search", q="nightly").json()) == ["Celery"]
    assert objects(agent.get("/search", q="ADR-12").json()) == ["Celery"]


def test_a_typo_in_a_subject_name_still_finds_its_facts(member, agent_for):
    write(member, subject="AuthService", object="2.0.0")
    write(member, subject="Inventory", predicate="core/uses", object="Redis")

    answer = agent_for(member).get("/search", q="Authservce").json()

    assert objects(answer) == ["2.0.0"]
    assert answer["results"][0]["values"][0]["similarity"] > 0.5


def test_matches_are_ranked_by_ts_rank_best_first(member, agent_for):
    write(member, subject="a", predicate="core/uses", object="cache", statement="a cache")
    write(member, subject="b", predicate="core/uses", object="Redis cache", statement="cache cache")

    answer = agent_for(member).get("/search", q="cache").json()

    ranks = [slot["values"][0]["rank"] for slot in answer["results"]]
    assert objects(answer) == ["Redis cache", "cache"]
    assert ranks == sorted(ranks, reverse=True) and ranks[0] > ranks[1]


def test_a_foreign_scope_full_of_matches_changes_no_rank_and_no_count(
    member, outsider, other_scope, agent_for
):
    write(member, subject="queue", predicate="core/uses", object="RabbitMQ broker")
    write(member, subject="mail", predicate="core/uses", object="broker relay", statement="broker")
    agent = agent_for(member)
    before = agent.get("/search", q="broker").json()

    for n in range(30):
        write(
            outsider,
            scope="elsewhere",
            subject=f"broker-{n}",
            predicate="core/uses",
            object=f"broker broker {n}",
            statement="broker",
        )
    after = agent.get("/search", q="broker").json()

    assert after["count"] == before["count"] == 2
    assert scored(after) == scored(before)
    # And a typo never suggests a name from the foreign scope.
    assert agent.get("/search", q="brokr-7").json()["did_you_mean"] == []


def test_a_scope_the_caller_may_not_read_answers_as_a_missing_one(member, outsider, agent_for):
    write(member, subject="secret-project", predicate="core/uses", object="Kafka")
    agent = agent_for(outsider)

    hidden = agent.get("/search", q="Kafka", scope="project")
    missing = agent.get("/search", q="Kafka", scope="no-such-scope")

    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json() == {"code": "not_found", "message": "scope not found"}
    assert agent.get("/search", q="Kafka").json()["count"] == 0


def test_disputed_values_come_grouped_by_slot_as_contested_as_recall_shows_them(
    member, steward, agent_for
):
    standing = write(steward, subject="AuthService", object="2.0.0", confidence=0.95).fact
    record_verdict(actor=steward, fact_id=standing.pk, verdict="admitted", ground="in the code")
    flagged = write(member, subject="AuthService", object="9.9.9", source_type="agent-note")
    assert flagged.status == "flagged"

    answer = agent_for(member).get("/search", q="AuthService").json()
    recalled = agent_for(member).get(
        "/truth", scope="project", subject="AuthService", contested="true"
    )

    [slot] = answer["results"]
    assert [fact["object"] for fact in slot["values"]] == ["2.0.0"]
    [contested] = slot["contested"]
    assert contested["fact"]["object"] == "9.9.9" and contested["fact"]["disputed"] is True
    [recall_value] = recalled.json()["contested"][0]["values"]
    assert contested["disputes"] == recall_value["disputes"]
    assert contested["disputes"][0]["candidates"] == [str(standing.pk)]
    # What the slot shows is recall's answer, by the one rule.
    assert slot["showing"] == recalled.json()["contested"][0]["showing"] == "contested"
    assert slot["standing"] == recalled.json()["contested"][0]["standing"] == [str(standing.pk)]


def test_a_slot_whose_only_match_is_disputed_names_the_value_standing_against_it(
    member, steward, agent_for
):
    standing = write(steward, subject="AuthService", object="2.0.0", confidence=0.95).fact
    record_verdict(actor=steward, fact_id=standing.pk, verdict="admitted", ground="in the code")
    write(member, subject="AuthService", object="9.9.9", source_type="agent-note")

    [slot] = agent_for(member).get("/search", q="9.9.9").json()["results"]

    assert slot["values"] == []
    assert [value["fact"]["object"] for value in slot["contested"]] == ["9.9.9"]
    assert slot["showing"] == "contested"
    assert slot["standing"] == [str(standing.pk)]


def test_a_dispute_with_nothing_current_on_its_slot_shows_unknown_as_recall_does(
    member, steward, agent_for
):
    # Never admitted, the steward's value is not what the member's recall serves.
    write(steward, subject="AuthService", object="2.0.0", confidence=0.95)
    write(member, subject="AuthService", object="9.9.9", source_type="agent-note")
    recalled = agent_for(member).get(
        "/truth", scope="project", subject="AuthService", contested="true"
    )

    [slot] = agent_for(member).get("/search", q="9.9.9").json()["results"]

    [recall_slot] = recalled.json()["contested"]
    assert slot["showing"] == recall_slot["showing"] == "unknown"
    assert slot["standing"] == recall_slot["standing"] == []


def test_an_undisputed_slot_is_settled(member, agent_for):
    write(member, subject="AuthService", object="2.0.0")
    [slot] = agent_for(member).get("/search", q="AuthService").json()["results"]
    assert slot["showing"] == "settled" and slot["standing"] == []


def test_filters_by_status_predicate_scope_and_valid_time(member, steward, agent_for):
    admitted = write(steward, subject="api", predicate="core/uses", object="REST style").fact
    record_verdict(actor=steward, fact_id=admitted.pk, verdict="admitted", ground="seen")
    write(member, subject="api", predicate="core/prefers", object="GraphQL style")
    write(steward, subject="api", predicate="core/decided-against", object="SOAP style")
    write(member, subject="api", predicate="core/prefers", object="SOAP style")  # commitment
    old = assert_fact(
        actor=member,
        data=fact_body(
            subject="api",
            predicate="core/uses",
            object="XML style",
            t_valid="2020-01-01T00:00:00Z",
            t_invalid="2021-01-01T00:00:00Z",
        ),
    )
    assert old.status == "created"
    agent = agent_for(member)

    def found(**query) -> list[str]:
        response = agent.get("/search", q="style", **query)
        assert response.status_code == 200, response.json()
        return sorted(objects(response.json()))

    everything = ["GraphQL style", "REST style", "SOAP style", "SOAP style"]
    assert found() == found(status="live") == found(scope="project") == everything
    assert found(status="admitted") == ["REST style"]
    assert found(status="candidate") == ["GraphQL style", "SOAP style", "SOAP style"]
    assert found(status="disputed") == ["SOAP style"]
    assert found(predicate="core/prefers") == ["GraphQL style", "SOAP style"]
    assert found(as_of="2020-06-01T00:00:00Z") == ["XML style"]


def test_bad_input_is_a_400_naming_the_parameter(member, agent_for):
    agent = agent_for(member)

    for query, field in [
        ({"q": "  "}, "q"),
        ({}, "q"),
        ({"q": "x", "status": "asleep"}, "status"),
        ({"q": "x", "limit": "0"}, "limit"),
        ({"q": "x", "as_of": "yesterday"}, "as_of"),
        ({"q": "x", "colour": "red"}, "colour"),
    ]:
        response = agent.get("/search", **query)
        assert response.status_code == 400, query
        assert response.json()["field"] == field, response.json()

    unknown = agent.get("/search", q="x", predicate="core/use").json()
    assert unknown["field"] == "predicate"
    assert unknown["did_you_mean"][0] == "core/uses"


def test_nothing_found_offers_the_nearest_entity_names(member, agent_for):
    write(member, subject="PaymentGateway", predicate="core/uses", object="Stripe")

    answer = agent_for(member).get("/search", q="Pyment gatway").json()

    assert answer["count"] == 0 and answer["results"] == []
    assert answer["did_you_mean"] == ["PaymentGateway"]


def test_a_search_costs_the_same_queries_for_one_match_as_for_forty(member, agent_for):
    agent = agent_for(member)
    write(member, subject="s-0", predicate="core/uses", object="needle 0")
    agent.get("/search", q="needle")  # warm the token and vocabulary caches

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert agent.get("/search", q="needle").status_code == 200
        return len(captured)

    one = queries()
    for n in range(1, 40):
        write(member, subject=f"s-{n}", predicate="core/uses", object=f"needle {n}")
    assert queries() == one


# --- did you mean ------------------------------------------------------------------


def test_recall_of_an_unknown_subject_names_the_nearest_ones(member, outsider, agent_for):
    write(member, subject="AuthService", object="2.0.0")
    write(outsider, scope="elsewhere", subject="AuthServices", object="1.0")
    agent = agent_for(member)

    response = agent.get("/truth", scope="project", subject="Authservce")

    assert response.status_code == 404
    assert response.json() == {
        "code": "not_found",
        "message": "subject not found; did you mean 'AuthService'?",
        "field": "subject",
        "did_you_mean": ["AuthService"],
    }
    # A known subject with nothing recalled is still an empty answer.
    assert agent.get("/truth", scope="project", subject="AuthService").json()["results"] == []


def test_slot_history_of_an_unknown_subject_or_predicate_names_the_nearest_ones(member, agent_for):
    write(member, subject="AuthService", object="2.0.0")
    agent = agent_for(member)

    subject = agent.get(
        "/slots/history", scope="project", subject="AuthSrvice", predicate="core/has-version"
    )
    predicate = agent.get(
        "/slots/history", scope="project", subject="AuthService", predicate="core/has-versions"
    )

    assert subject.status_code == 404 and subject.json()["did_you_mean"] == ["AuthService"]
    assert predicate.status_code == 400
    assert predicate.json()["did_you_mean"][0] == "core/has-version"


def test_an_unknown_predicate_or_source_type_in_an_assertion_names_the_nearest_valid_ones(
    member, agent_for
):
    agent = agent_for(member)

    predicate = agent.post("/facts", fact_body(predicate="core/deployed_via")).json()
    source = agent.post("/facts", fact_body(source_type="agent_note")).json()

    assert predicate["code"] == "invalid" and predicate["field"] == "predicate"
    assert predicate["did_you_mean"][0] == "core/deployed-via"
    assert source["field"] == "source_type" and source["did_you_mean"][0] == "agent-note"
    assert "did you mean 'agent-note'" in source["message"]


# --- MCP ------------------------------------------------------------------------------


# serialized_rollback: data migrations seed the vocabulary, which another
# transactional test's flush removes.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_mcp_search_tool_finds_a_fact_by_a_word_of_its_object(mcp_url):
    scope = Scope.objects.create(name="project")
    agent = make_user("agent-007")
    scope.members.add(agent)
    write(agent, subject="shoply", predicate="core/deployed-via", object="Fly.io machines")
    _token, secret = issue_token(actor=agent, name="mcp")

    found = body(call_http(mcp_url, secret, "search", {"q": "machines"}))
    refused = call_http(mcp_url, secret, "recall", {"scope": "project", "subject": "shoplyy"})
    bad = call_http(mcp_url, secret, "search", {"q": ""})

    assert objects(found) == ["Fly.io machines"] and found["count"] == 1
    assert refused.is_error and body(refused)["did_you_mean"] == ["shoply"]
    assert bad.is_error and body(bad)["field"] == "q"


def test_as_of_defaults_to_now_and_is_echoed(member, agent_for):
    write(member, subject="x", predicate="core/uses", object="thing")
    before = timezone.now()
    answer = agent_for(member).get("/search", q="thing").json()
    assert before - timedelta(seconds=5) < timezone.datetime.fromisoformat(answer["as_of"])
