"""A challenge's answer says what it does; a second open one is refused (issue 30 item 7)."""

import pytest

from admissions.actions import record_verdict
from admissions.models import Record
from memories.store.models import AuditEntry
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def admitted(author, steward) -> list:
    """Eight admitted facts in one scope: a flood cap of 2 per account."""
    facts = []
    for n in range(8):
        fact = assert_fact(actor=author, data=fact_body(subject=f"lib-{n}")).fact
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="checked")
        facts.append(fact)
    return facts


def challenge(agent, fact, **body):
    return agent.post(
        f"/facts/{fact.pk}/challenges", {"ground": "wrong", "evidence": ["ticket-1"], **body}
    )


def test_a_challenge_within_the_cap_answers_suspended_and_one_past_it_queued(
    admitted, member, agent_for
):
    agent = agent_for(member)
    first = challenge(agent, admitted[0]).json()
    second = challenge(agent, admitted[1]).json()
    third = challenge(agent, admitted[2])
    assert third.status_code == 201
    queued = third.json()
    assert [first["effect"], second["effect"], queued["effect"]] == [
        "suspended",
        "suspended",
        "queued",
    ]
    assert queued["flood_cap"] == 2
    assert queued["effect_reason"].startswith(
        "Queued with no effect: it does not suspend the fact."
    )
    assert "no time window" in queued["effect_reason"]
    assert agent.get(f"/facts/{admitted[2].pk}").json()["admission"]["status"] == "admitted"


def test_a_challenge_without_evidence_answers_none_and_on_a_candidate_dormant(
    author, member, agent_for
):
    agent = agent_for(member)
    candidate = assert_fact(actor=author, data=fact_body()).fact
    other = assert_fact(actor=author, data=fact_body(subject="billing")).fact
    assert challenge(agent, candidate).json()["effect"] == "dormant"
    assert challenge(agent, other, evidence=None).json()["effect"] == "none"


def test_a_second_open_challenge_is_409_naming_the_open_one_and_writes_nothing(
    admitted, member, agent_for
):
    agent = agent_for(member)
    first = challenge(agent, admitted[0]).json()
    records, audits = Record.objects.count(), AuditEntry.objects.count()
    again = challenge(agent, admitted[0], ground="and again")
    assert again.status_code == 409
    refused = again.json()
    assert refused["code"] == "challenge_already_open"
    assert first["id"] in refused["message"]
    assert (Record.objects.count(), AuditEntry.objects.count()) == (records, audits)


def test_after_its_refutation_the_same_account_challenges_the_fact_again(
    admitted, member, steward, agent_for
):
    agent = agent_for(member)
    first = challenge(agent, admitted[0]).json()
    agent_for(steward).post(f"/challenges/{first['id']}/refutations", {"ground": "it stands"})
    again = challenge(agent, admitted[0])
    assert again.status_code == 201
    assert again.json()["effect"] == "suspended"


def test_the_openapi_document_lists_the_effects_and_the_answer_schema(agent_for, member):
    document = agent_for(member).get("/openapi.json").json()
    operation = document["paths"]["/api/v1/facts/{fact_id}/challenges"]["post"]
    answer = operation["responses"]["201"]["content"]["application/json"]["schema"]
    name = answer["$ref"].rsplit("/", 1)[-1]
    schema = document["components"]["schemas"][name]
    assert schema["properties"]["effect"]["enum"] == ["suspended", "queued", "dormant", "none"]
    assert {"effect", "effect_reason", "flood_cap"} <= set(schema["required"])
