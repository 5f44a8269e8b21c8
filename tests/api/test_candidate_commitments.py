"""The API's answer to a steward's write over a candidate commitment (issue 29 item 8).

The rule and its cases are in tests/memories/test_candidate_commitments.py;
here the same reproduction goes through ``POST /api/v1/facts``.
"""

import pytest

from tests.memories.test_candidate_commitments import DECIDED, PREFERS

pytestmark = pytest.mark.django_db


def test_the_api_answers_a_stewards_write_over_a_candidate_commitment_superseded(
    member, steward, agent_for
):
    proposed = agent_for(member).post("/facts", DECIDED)
    assert proposed.status_code == 201, proposed.json()

    response = agent_for(steward).post("/facts", PREFERS)

    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["status"], body["reason"], body["conflict"]) == ("superseded", None, None)
    assert body["superseded"] == [proposed.json()["fact"]["id"]]
    assert body["fact"]["disputed"] is False


def test_the_api_still_flags_a_stewards_write_over_an_admitted_commitment(
    member, steward, agent_for
):
    proposed = agent_for(member).post("/facts", DECIDED).json()["fact"]
    admitted = agent_for(steward).post(
        f"/facts/{proposed['id']}/admissions", {"verdict": "admitted", "ground": "ADR-7"}
    )
    assert admitted.status_code in (200, 201), admitted.json()

    body = agent_for(steward).post("/facts", PREFERS).json()

    assert (body["status"], body["reason"]) == ("flagged", "commitment")
    assert [c["id"] for c in body["candidates"]] == [proposed["id"]]
