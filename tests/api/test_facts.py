"""POST /facts, GET /facts/{id}, POST /facts/{id}/invalidate and POST /outcomes (SPEC §10)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from admissions.actions import record_verdict
from api.app import api
from api.schemas import AnswerEncoder, AssertOut
from memories.store.models import Fact, Outcome
from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db

FACT_FIELDS = {
    "id",
    "scope",
    "subject",
    "predicate",
    "object",
    "object_kind",
    "epistemic",
    "source_type",
    "confidence",
    "effective_confidence",
    "t_valid",
    "t_invalid",
    "recorded_at",
    "last_reinforced_at",
    "superseded_by",
    "disputed",
    "bucket",
    "author",
    "episode",
    "statement",
    "evidence",
    "admission",
}


# --- POST /facts ---------------------------------------------------------------------


def test_asserting_a_new_fact_answers_201_with_the_whole_fact(member, agent_for):
    response = agent_for(member).post(
        "/facts",
        fact_body(confidence=0.95, evidence=[{"ref": "setup.py", "quote": "version='2.0.0'"}]),
    )
    assert response.status_code == 201
    body = response.json()
    assert (body["status"], body["reason"], body["candidates"], body["conflict"]) == (
        "created",
        None,
        [],
        None,
    )
    fact = body["fact"]
    assert set(fact) == FACT_FIELDS
    assert fact["subject"] == "AuthService" and fact["object"] == "2.0.0"
    assert fact["confidence"] == pytest.approx(0.95)
    assert fact["author"] == "mira" and fact["disputed"] is False
    assert fact["admission"]["status"] == "candidate"
    assert fact["admission"]["explanation"]
    # Answered without reading the records back, and the same as reading them.
    again = agent_for(member).get(f"/facts/{fact['id']}").json()
    assert again["admission"] == fact["admission"] and again["disputed"] is False
    assert fact["evidence"] == [{"ref": "setup.py", "quote": "version='2.0.0'"}]
    # ISO 8601 with an offset, to the microsecond.
    stored = Fact.objects.get(pk=fact["id"])
    assert fact["t_valid"] == stored.t_valid.isoformat()
    assert fact["t_valid"].endswith("+00:00")


def test_reinforcing_answers_200_and_the_same_fact(member, agent_for):
    agent = agent_for(member)
    first = agent.post("/facts", fact_body(confidence=0.6)).json()["fact"]
    again = agent.post("/facts", fact_body(object=" 2.0.0 ", confidence=0.9))
    assert again.status_code == 200
    body = again.json()
    assert body["status"] == "reinforced"
    assert body["fact"]["id"] == first["id"]
    assert body["fact"]["confidence"] == pytest.approx(0.9)


def test_a_flagged_write_answers_201_with_its_candidates_and_conflict(member, agent_for):
    agent = agent_for(member)
    standing = agent.post("/facts", fact_body(confidence=0.95)).json()["fact"]
    response = agent.post("/facts", fact_body(object="3.0.0", source_type="agent-note"))
    assert response.status_code == 201
    body = response.json()
    assert (body["status"], body["reason"]) == ("flagged", "outranked")
    assert [c["id"] for c in body["candidates"]] == [standing["id"]]
    assert body["conflict"] is not None
    assert body["fact"]["disputed"] is True
    assert body["candidates"][0]["disputed"] is False


def test_a_superseding_write_lists_what_it_superseded(member, agent_for):
    agent = agent_for(member)
    old = agent.post("/facts", fact_body()).json()["fact"]
    body = agent.post("/facts", fact_body(object="2.1.0")).json()
    assert body["status"] == "superseded"
    assert body["superseded"] == [old["id"]]


def test_every_kind_of_assert_answer_is_exactly_its_schema(member, agent_for):
    # POST /facts renders its answer without validating it against AssertOut
    # first; what it sends must be what validating would have sent.
    agent = agent_for(member)
    answers = [
        agent.post("/facts", fact_body(confidence=1, evidence=["ci.log", {"ref": "setup.py"}])),
        agent.post("/facts", fact_body(confidence=0.9)),  # reinforced
        agent.post("/facts", fact_body(object="3.0.0", source_type="agent-note")),  # flagged
        agent.post("/facts", fact_body(object="2.1.0")),  # superseded
        agent.post("/facts", fact_body(subject="Billing", bucket="user", t_valid="2020-01-01")),
    ]
    assert [a.json()["status"] for a in answers] == [
        "created",
        "reinforced",
        "flagged",
        "superseded",
        "created",
    ]
    for answer in answers:
        assert answer["Content-Type"] == api.get_content_type()
        validated = AssertOut.model_validate_json(answer.content).model_dump()
        assert answer.content == json.dumps(validated, cls=AnswerEncoder).encode()


def test_a_user_bucket_fact_has_no_admission_status(member, agent_for):
    body = agent_for(member).post("/facts", fact_body(bucket="user")).json()
    assert body["fact"]["bucket"] == "user"
    assert body["fact"]["admission"]["status"] is None


def test_another_scopes_write_answers_exactly_like_a_missing_scope(member, outsider, agent_for):
    forbidden = agent_for(outsider).post("/facts", fact_body())
    missing = agent_for(member).post("/facts", fact_body(scope="no-such-scope"))
    assert forbidden.status_code == missing.status_code == 404
    assert forbidden.json() == missing.json() == {"code": "not_found", "message": "scope not found"}
    assert Fact.objects.count() == 0


# --- GET /facts/{id} -----------------------------------------------------------------


def test_a_fact_reads_with_its_effective_confidence_at_a_time(member, steward, agent_for):
    agent = agent_for(member)
    created = agent.post("/facts", fact_body(source_type="session-log", confidence=0.7)).json()
    fact_id = created["fact"]["id"]
    record_verdict(actor=steward, fact_id=fact_id, verdict="admitted", ground="checked")
    later = timezone.now() + timedelta(days=90)
    body = agent.get(f"/facts/{fact_id}", at=later.isoformat()).json()
    assert body["confidence"] == pytest.approx(0.7)
    assert body["effective_confidence"] == pytest.approx(0.35, abs=0.001)
    assert body["admission"]["status"] == "admitted"
    now_body = agent.get(f"/facts/{fact_id}").json()
    assert now_body["effective_confidence"] == pytest.approx(0.7, abs=0.001)


def test_another_scopes_fact_reads_exactly_like_a_missing_one(member, outsider, agent_for):
    fact_id = agent_for(member).post("/facts", fact_body()).json()["fact"]["id"]
    hidden = agent_for(outsider).get(f"/facts/{fact_id}")
    missing = agent_for(outsider).get("/facts/00000000-0000-0000-0000-000000000000")
    garbled = agent_for(outsider).get("/facts/not-a-uuid")
    assert hidden.status_code == missing.status_code == garbled.status_code == 404
    assert hidden.json() == missing.json() == garbled.json()
    assert hidden.content == missing.content


def test_a_bad_time_to_read_at_is_refused_naming_the_field(member, agent_for):
    agent = agent_for(member)
    fact_id = agent.post("/facts", fact_body()).json()["fact"]["id"]
    response = agent.get(f"/facts/{fact_id}", at="next tuesday")
    assert response.status_code == 400
    assert response.json()["field"] == "at"


# --- POST /facts/{id}/invalidate -------------------------------------------------------


def test_the_author_invalidates_once_and_then_gets_409(member, agent_for):
    agent = agent_for(member)
    fact_id = agent.post("/facts", fact_body()).json()["fact"]["id"]
    response = agent.post(f"/facts/{fact_id}/invalidate", {"reason": "retired"})
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["fact_id"]) == ("invalidated", fact_id)
    assert body["at"] == Fact.objects.get(pk=fact_id).t_invalid.isoformat()
    again = agent.post(f"/facts/{fact_id}/invalidate", {"reason": "again"})
    assert again.status_code == 409
    assert again.json()["code"] == "state_conflict"


def test_invalidation_is_refused_to_other_members_and_hidden_from_outsiders(
    member, author, outsider, agent_for
):
    fact_id = agent_for(author).post("/facts", fact_body()).json()["fact"]["id"]
    assert agent_for(member).post(f"/facts/{fact_id}/invalidate", {"reason": "no"}).status_code == (
        403
    )
    assert agent_for(outsider).post(
        f"/facts/{fact_id}/invalidate", {"reason": "no"}
    ).status_code == (404)
    assert Fact.objects.get(pk=fact_id).is_live


def test_a_steward_of_the_scope_may_invalidate_anyones_fact(author, scope_steward, agent_for):
    fact_id = agent_for(author).post("/facts", fact_body()).json()["fact"]["id"]
    response = agent_for(scope_steward).post(f"/facts/{fact_id}/invalidate", {"reason": "wrong"})
    assert response.status_code == 200


def test_invalidation_without_a_reason_is_refused(member, agent_for):
    agent = agent_for(member)
    fact_id = agent.post("/facts", fact_body()).json()["fact"]["id"]
    response = agent.post(f"/facts/{fact_id}/invalidate", {"reason": "   "})
    assert response.status_code == 400
    assert response.json()["field"] == "reason"
    assert Fact.objects.get(pk=fact_id).is_live


# --- POST /outcomes --------------------------------------------------------------------


def test_an_accepted_outcome_resets_the_disuse_clock(member, agent_for):
    agent = agent_for(member)
    fact_id = agent.post("/facts", fact_body()).json()["fact"]["id"]
    Fact.objects.filter(pk=fact_id).update(last_reinforced_at=timezone.now() - timedelta(days=200))
    response = agent.post("/outcomes", {"fact_ids": [fact_id], "outcome": "accepted"})
    assert response.status_code == 201
    body = response.json()
    assert body["fact_ids"] == [fact_id] and body["outcome"] == "accepted"
    fact = Fact.objects.get(pk=fact_id)
    assert timezone.now() - fact.last_reinforced_at < timedelta(minutes=1)
    assert Outcome.objects.get(pk=body["id"]).facts.get().pk == fact.pk


def test_an_outcome_naming_an_invisible_fact_is_404_and_records_nothing(
    member, outsider, agent_for
):
    fact_id = agent_for(member).post("/facts", fact_body()).json()["fact"]["id"]
    response = agent_for(outsider).post("/outcomes", {"fact_ids": [fact_id]})
    assert response.status_code == 404
    assert Outcome.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"fact_ids": []}, "fact_ids"),
        ({"fact_ids": ["x"]}, "fact_ids.0"),
        ({"fact_ids": None}, "fact_ids"),
    ],
)
def test_a_malformed_outcome_is_refused(member, agent_for, body, field):
    response = agent_for(member).post("/outcomes", body)
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert Outcome.objects.count() == 0


def test_an_outcome_with_two_bad_fields_names_both(member, agent_for):
    response = agent_for(member).post("/outcomes", {"fact_ids": [], "outcome": "rejected"})
    assert response.status_code == 400
    assert [error["field"] for error in response.json()["errors"]] == ["fact_ids", "outcome"]
    assert Outcome.objects.count() == 0
