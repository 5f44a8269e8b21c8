"""Verdicts, challenges, refutations, corrections and records over the API (SPEC §6, §10)."""

import pytest

from admissions.models import Record
from memories.store.models import Fact
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db

RECORD_FIELDS = {
    "id",
    "fact",
    "role",
    "verdict",
    "ground",
    "evidence",
    "challenge",
    "author",
    "inserted_at",
}


@pytest.fixture
def fact(author) -> Fact:
    return assert_fact(actor=author, data=fact_body()).fact


def admit(agent, fact_id):
    return agent.post(f"/facts/{fact_id}/admissions", {"verdict": "admitted", "ground": "checked"})


# --- POST /facts/{id}/admissions --------------------------------------------------------


def test_a_steward_admits_a_fact(fact, steward, agent_for):
    response = admit(agent_for(steward), fact.pk)
    assert response.status_code == 201
    record = response.json()
    assert set(record) == RECORD_FIELDS
    assert (record["role"], record["verdict"], record["ground"]) == (
        "admission",
        "admitted",
        "checked",
    )
    assert (record["evidence"], record["challenge"], record["author"]) == (None, None, "stella")
    status = agent_for(steward).get(f"/facts/{fact.pk}").json()["admission"]
    assert status["status"] == "admitted"


def test_a_member_gets_403_and_an_outsider_404_for_a_verdict(fact, member, outsider, agent_for):
    assert admit(agent_for(member), fact.pk).status_code == 403
    hidden = admit(agent_for(outsider), fact.pk)
    missing = admit(agent_for(outsider), "00000000-0000-0000-0000-000000000000")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()
    assert Record.objects.count() == 0


def test_an_unknown_verdict_is_400(fact, steward, agent_for):
    response = agent_for(steward).post(
        f"/facts/{fact.pk}/admissions", {"verdict": "maybe", "ground": "hmm"}
    )
    assert response.status_code == 400
    assert response.json()["field"] == "verdict"
    assert Record.objects.count() == 0


# --- POST /facts/{id}/challenges and /challenges/{id}/refutations -----------------------


def test_an_evidenced_challenge_suspends_an_admitted_fact_until_refuted(
    fact, member, steward, agent_for
):
    admit(agent_for(steward), fact.pk)
    challenge = agent_for(member).post(
        f"/facts/{fact.pk}/challenges",
        {"ground": "the release says 2.0.1", "evidence": [{"ref": "CHANGELOG", "quote": "2.0.1"}]},
    )
    assert challenge.status_code == 201
    body = challenge.json()
    assert body["role"] == "challenge"
    assert body["evidence"] == [{"ref": "CHANGELOG", "quote": "2.0.1"}]
    assert agent_for(member).get(f"/facts/{fact.pk}").json()["admission"]["status"] == ("suspended")

    refuted = agent_for(steward).post(
        f"/challenges/{body['id']}/refutations", {"ground": "2.0.1 is a tag, not a release"}
    )
    assert refuted.status_code == 201
    assert refuted.json()["challenge"] == body["id"]
    assert agent_for(member).get(f"/facts/{fact.pk}").json()["admission"]["status"] == "admitted"
    again = agent_for(steward).post(f"/challenges/{body['id']}/refutations", {"ground": "again"})
    assert again.status_code == 409


def test_a_challenge_without_evidence_is_recorded_with_evidence_null(fact, member, agent_for):
    response = agent_for(member).post(f"/facts/{fact.pk}/challenges", {"ground": "feels wrong"})
    assert response.status_code == 201
    assert response.json()["evidence"] is None


def test_an_explicitly_empty_evidence_list_is_refused(fact, member, agent_for):
    response = agent_for(member).post(
        f"/facts/{fact.pk}/challenges", {"ground": "wrong", "evidence": []}
    )
    assert response.status_code == 400
    assert response.json()["field"] == "evidence"
    assert Record.objects.count() == 0


def test_only_a_steward_refutes(fact, member, steward, agent_for):
    admit(agent_for(steward), fact.pk)
    challenge = agent_for(member).post(
        f"/facts/{fact.pk}/challenges", {"ground": "wrong", "evidence": ["log-1"]}
    )
    path = f"/challenges/{challenge.json()['id']}/refutations"
    assert agent_for(member).post(path, {"ground": "no"}).status_code == 403
    assert Record.objects.refutations().count() == 0


# --- POST /facts/{id}/corrections --------------------------------------------------------


def test_the_author_corrects_a_fact_and_the_replacement_is_a_candidate(fact, author, agent_for):
    response = agent_for(author).post(
        f"/facts/{fact.pk}/corrections", {"object": "2.0.1", "ground": "typo in the version"}
    )
    assert response.status_code == 201
    body = response.json()
    assert body["corrected"] == str(fact.pk)
    assert body["fact"]["object"] == "2.0.1"
    assert body["fact"]["subject"] == "AuthService"
    assert body["fact"]["admission"]["status"] == "candidate"
    assert (body["refutations"], body["admission"]) == ([], None)
    old = Fact.objects.get(pk=fact.pk)
    assert str(old.superseded_by_id) == body["fact"]["id"]


def test_a_stewards_correction_refutes_open_challenges_and_admits_the_replacement(
    fact, member, steward, agent_for
):
    admit(agent_for(steward), fact.pk)
    agent_for(member).post(f"/facts/{fact.pk}/challenges", {"ground": "wrong", "evidence": ["x"]})
    body = (
        agent_for(steward)
        .post(f"/facts/{fact.pk}/corrections", {"object": "2.0.1", "ground": "fixed"})
        .json()
    )
    assert len(body["refutations"]) == 1 and body["admission"] is not None
    assert body["fact"]["admission"]["status"] == "admitted"


def test_another_member_may_not_correct(fact, member, agent_for):
    response = agent_for(member).post(
        f"/facts/{fact.pk}/corrections", {"object": "9", "ground": "mine now"}
    )
    assert response.status_code == 403
    assert Fact.objects.get(pk=fact.pk).is_live


# --- GET /facts/{id}/records -------------------------------------------------------------


def test_records_read_oldest_first_a_page_at_a_time(fact, member, steward, agent_for):
    stewarding = agent_for(steward)
    admit(stewarding, fact.pk)
    agent_for(member).post(f"/facts/{fact.pk}/challenges", {"ground": "one"})
    # One open challenge per account and fact: the second is another account's.
    stewarding.post(f"/facts/{fact.pk}/challenges", {"ground": "two"})
    first = agent_for(member).get(f"/facts/{fact.pk}/records", limit=2).json()
    second = agent_for(member).get(f"/facts/{fact.pk}/records", cursor=first["next"]).json()
    grounds = [r["ground"] for r in first["results"] + second["results"]]
    assert grounds == ["checked", "one", "two"]
    assert second["next"] is None


def test_another_scopes_records_are_404(fact, outsider, agent_for):
    response = agent_for(outsider).get(f"/facts/{fact.pk}/records")
    assert response.status_code == 404


def test_rejecting_the_flagged_side_over_the_api_closes_its_conflict(author, steward, agent_for):
    assert_fact(actor=author, data=fact_body(confidence=0.95))
    flagged = assert_fact(
        actor=author, data=fact_body(object="3.0.0", source_type="agent-note")
    ).fact
    agent = agent_for(steward)
    (conflict,) = agent.get("/conflicts", scope="project").json()["results"]
    assert conflict["status"] == "open"
    response = agent.post(
        f"/facts/{flagged.pk}/admissions", {"verdict": "rejected", "ground": "code says 2.0.0"}
    )
    assert response.status_code == 201
    (closed,) = agent.get("/conflicts", scope="project", status="resolved").json()["results"]
    assert (closed["id"], closed["resolution"], closed["resolved_by"]) == (
        conflict["id"],
        "moot",
        "stella",
    )
    assert "code says 2.0.0" in closed["reason"]
    assert agent.get("/conflicts", scope="project", status="open").json()["results"] == []


def test_admitting_the_flagged_side_over_the_api_leaves_its_conflict_open(
    author, steward, agent_for
):
    assert_fact(actor=author, data=fact_body(confidence=0.95))
    flagged = assert_fact(
        actor=author, data=fact_body(object="3.0.0", source_type="agent-note")
    ).fact
    agent = agent_for(steward)
    assert admit(agent, flagged.pk).status_code == 201
    (still,) = agent.get("/conflicts", scope="project", status="open").json()["results"]
    assert still["status"] == "open"
