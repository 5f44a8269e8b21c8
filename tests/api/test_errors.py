"""Bad input: a 4xx naming what is wrong, never a 500, and nothing written."""

import json

import pytest
from django.db import connection

from tests.api.conftest import fact_body

pytestmark = pytest.mark.django_db


def counts() -> dict[str, int]:
    with connection.cursor() as cursor:
        found = {}
        for table in (
            "memories_fact",
            "memories_entity",
            "memories_conflict",
            "memories_auditentry",
            "admissions_record",
        ):
            cursor.execute(f"SELECT count(*) FROM {table}")
            found[table] = cursor.fetchone()[0]
        return found


@pytest.fixture
def agent(member, agent_for):
    agent = agent_for(member)
    # One fact already stands, so a refused write has something it could have touched.
    assert agent.post("/facts", fact_body()).status_code == 201
    return agent


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"confidence": "high"}, "confidence"),
        ({"confidence": True}, "confidence"),
        ({"confidence": 10**400}, "confidence"),
        ({"subject": 5}, "subject"),
        ({"subject": None}, "subject"),
        ({"evidence": "a link"}, "evidence"),
        ({"evidence": [{"ref": "x", "page": 3}]}, "evidence.0.page"),
        ({"admission": "admitted"}, "admission"),
        ({"subject": "Auth\x00Service"}, "subject"),
        ({"object": "x" * 2_001}, "object"),
        ({"predicate": "core/likes"}, "predicate"),
        ({"source_type": "rumour"}, "source_type"),
        ({"epistemic": "hunch"}, "epistemic"),
        ({"bucket": "team"}, "bucket"),
        ({"object_kind": "number"}, "object_kind"),
        ({"subject": "   "}, "subject"),
        ({"t_valid": "yesterday-ish"}, "t_valid"),
        ({"t_valid": "0001-01-01T00:00:00+05:00"}, "t_valid"),
        ({"t_valid": "2026-05-01T00:00:00Z", "t_invalid": "2026-04-01T00:00:00Z"}, "t_invalid"),
    ],
)
def test_a_bad_field_is_refused_by_name_and_nothing_is_written(agent, change, field):
    before = counts()
    response = agent.post("/facts", {**fact_body(object="9.9.9"), **change})
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid"
    assert body["field"] == field
    assert body["message"]
    assert counts() == before


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ('{"scope": "project", ', "malformed"),
        ("not json at all", "malformed"),
        (b"\xff\xfe\x00", "malformed"),
        ("[1, 2, 3]", "invalid"),
        ('"just a string"', "invalid"),
        (
            '{"scope": "project", "subject": "a", "predicate": "core/uses", "object": "b",'
            ' "source_type": "code", "confidence": NaN}',
            "invalid",
        ),
    ],
)
def test_a_body_that_is_not_a_json_object_is_refused(agent, raw, code):
    before = counts()
    response = agent.post("/facts", raw=raw)
    assert response.status_code == 400
    assert response.json()["code"] == code
    assert counts() == before


def test_an_oversized_body_is_refused_with_413(agent, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    before = counts()
    response = agent.post("/facts", fact_body(statement="x" * 20_000))
    assert response.status_code == 413
    assert response.json()["code"] == "too_large"
    assert counts() == before


def test_an_empty_body_is_refused(agent):
    response = agent.post("/facts", raw="")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


@pytest.mark.parametrize(
    "query",
    [
        {"scope": "pro\x00ject"},
        {"scope": "project", "as_of": "soon"},
        {"scope": "project", "limit": "0"},
        {"scope": "project", "limit": "201"},
        {"scope": "project", "cursor": "forged"},
        {},
    ],
)
def test_bad_query_parameters_are_400(agent, query):
    response = agent.get("/truth", **query)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_a_nul_byte_in_an_episode_name_is_400(agent, steward, agent_for):
    response = agent_for(steward).post(
        "/episodes/run%00one/withdraw", {"scope": "project", "reason": "poisoned"}
    )
    assert response.status_code == 400
    assert response.json()["field"] == "episode"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/facts/{id}/invalidate", {"reason": "retired"}),
        ("/facts/{id}/admissions", {"verdict": "admitted", "ground": "checked"}),
        ("/facts/{id}/challenges", {"ground": "wrong", "evidence": [{"ref": "log"}]}),
        ("/facts/{id}/corrections", {"ground": "typo", "object": "2.0.1"}),
        ("/outcomes", {"fact_ids": ["{id}"]}),
    ],
)
def test_writes_refuse_fields_they_do_not_know(agent, steward, agent_for, path, body):
    fact_id = agent.post("/facts", fact_body()).json()["fact"]["id"]
    body = json.loads(json.dumps(body).replace("{id}", fact_id))
    before = counts()
    response = agent_for(steward).post(path.format(id=fact_id), {**body, "sneaky": 1})
    assert response.status_code == 400
    assert response.json()["field"] == "sneaky"
    assert counts() == before


def test_an_unknown_path_under_the_api_answers_json_404(agent):
    response = agent.get("/no/such/thing")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    # and it shadows no real operation
    assert agent.get("/truth", scope="project").status_code == 200


def test_an_episode_name_may_hold_slashes_and_line_breaks(agent, steward, agent_for):
    response = agent_for(steward).post(
        "/episodes/runs/2026%0A13/withdraw", {"scope": "project", "reason": "x", "dry_run": True}
    )
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "message": "episode not found"}
