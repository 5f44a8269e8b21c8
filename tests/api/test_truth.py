"""GET /truth: admitted system facts and one's own user facts, at any time, contested on request."""

from datetime import timedelta

import pytest
from django.utils import timezone

from admissions.actions import record_verdict
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db


def write(actor, **fields):
    return assert_fact(actor=actor, data=fact_body(**fields))


def admit(steward, result, now=None):
    record_verdict(
        actor=steward, fact_id=result.fact.pk, verdict="admitted", ground="checked", now=now
    )
    return result.fact


def objects(body) -> list[str]:
    return [fact["object"] for fact in body["results"]]


def test_truth_serves_admitted_system_facts_and_the_callers_own_user_facts(
    member, author, steward, agent_for
):
    admit(steward, write(author, subject="api", predicate="core/uses", object="REST"))
    write(author, subject="api", predicate="core/uses", object="gRPC")  # a candidate
    write(member, subject="api", predicate="core/uses", object="SOAP", bucket="user")
    write(author, subject="api", predicate="core/uses", object="XML", bucket="user")

    body = agent_for(member).get("/truth", scope="project", subject="api").json()
    assert sorted(objects(body)) == ["REST", "SOAP"]
    assert body["next"] is None and body["contested"] is None
    assert {fact["admission"]["status"] for fact in body["results"]} == {"admitted", None}


def test_truth_as_of_a_valid_time_and_as_known_at_a_transaction_time(member, steward, agent_for):
    old = assert_fact(
        actor=member,
        data=fact_body(object="1.0", t_valid="2025-01-01T00:00:00Z"),
        now=timezone.now() - timedelta(days=30),
    )
    admit(steward, old, now=timezone.now() - timedelta(days=29))
    learned = timezone.now() - timedelta(days=10)
    new = assert_fact(
        actor=member, data=fact_body(object="2.0", t_valid="2025-06-01T00:00:00Z"), now=learned
    )
    admit(steward, new, now=learned)
    agent = agent_for(member)
    assert objects(agent.get("/truth", scope="project").json()) == ["2.0"]
    assert objects(agent.get("/truth", scope="project", as_of="2025-03-01T00:00:00Z").json()) == [
        "1.0"
    ]
    before_learning = (learned - timedelta(days=1)).isoformat()
    assert objects(agent.get("/truth", scope="project", known_at=before_learning).json()) == ["1.0"]


def test_truth_pages_through_a_stable_snapshot(member, steward, agent_for):
    for n in range(5):
        admit(steward, write(member, subject=f"svc-{n}", predicate="core/uses", object="redis"))
    agent = agent_for(member)
    first = agent.get("/truth", scope="project", limit=2).json()
    assert len(first["results"]) == 2 and first["next"]
    # A write between pages does not shift the pages already promised.
    admit(steward, write(member, subject="svc-9", predicate="core/uses", object="redis"))
    seen = [fact["id"] for fact in first["results"]]
    cursor = first["next"]
    while cursor:
        page = agent.get("/truth", scope="project", limit=2, cursor=cursor).json()
        seen += [fact["id"] for fact in page["results"]]
        cursor = page["next"]
    assert len(seen) == len(set(seen)) == 5
    assert len(agent.get("/truth", scope="project").json()["results"]) == 6


def test_a_forged_cursor_is_refused(member, agent_for):
    response = agent_for(member).get("/truth", scope="project", cursor="eyJhIjoxfQ:forged")
    assert response.status_code == 400
    assert response.json()["field"] == "cursor"


def test_contested_truth_names_each_disputed_value_and_why(member, steward, agent_for):
    standing = admit(steward, write(member, object="2.0.0", confidence=0.95))
    flagged = write(member, object="3.0.0", source_type="agent-note")
    admit(
        steward,
        write(member, subject="api-layer", predicate="core/uses", object="REST"),
    )
    agent = agent_for(member)

    plain = agent.get("/truth", scope="project", subject="AuthService").json()
    assert objects(plain) == ["2.0.0"] and plain["contested"] is None

    body = agent.get("/truth", scope="project", subject="AuthService", contested="true").json()
    assert objects(body) == ["2.0.0"]
    [slot] = body["contested"]
    assert (slot["subject"], slot["predicate"]) == ("AuthService", "core/has-version")
    [value] = slot["values"]
    assert value["fact"]["object"] == "3.0.0" and value["fact"]["disputed"] is True
    assert value["fact"]["admission"]["status"] == "candidate"
    [dispute] = value["disputes"]
    assert dispute["kind"] == "outranked"
    assert dispute["conflict"] == str(flagged.conflict.pk)
    assert dispute["candidates"] == [str(standing.pk)]


def test_a_scope_the_caller_cannot_read_is_404(outsider, member, agent_for):
    write(member)
    hidden = agent_for(outsider).get("/truth", scope="project")
    missing = agent_for(outsider).get("/truth", scope="nope")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
