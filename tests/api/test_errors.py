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


# --- every error at once (issue 31 §2) ---------------------------------------------------


def test_three_bad_fields_are_reported_at_once_and_nothing_is_written(agent):
    before = counts()
    response = agent.post(
        "/facts",
        fact_body(predicate="core/likes", source_type="rumour", confidence=1.5),
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert "field" not in body
    assert [error["field"] for error in body["errors"]] == [
        "predicate",
        "source_type",
        "confidence",
    ]
    assert [error["code"] for error in body["errors"]] == [
        "unknown_name",
        "unknown_name",
        "invalid",
    ]
    for error in body["errors"]:
        assert error["message"].startswith(error["field"])
    assert "predicate, source_type, confidence" in body["message"]
    assert counts() == before


def test_what_the_schema_and_the_vocabulary_refuse_is_reported_in_one_answer(agent):
    # epistemic and bucket are closed sets the schema checks; the predicate
    # only the vocabulary knows. One answer names all three.
    before = counts()
    response = agent.post(
        "/facts",
        fact_body(epistemic="hunch", bucket="team", predicate="core/likes", colour="red"),
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    fields = {error["field"]: error["code"] for error in body["errors"]}
    assert fields == {
        "epistemic": "invalid",
        "bucket": "invalid",
        "predicate": "unknown_name",
        "colour": "unknown_field",
    }
    assert counts() == before


def test_a_missing_required_field_is_coded_required_among_the_others(agent):
    sent = fact_body(confidence=-3)
    del sent["subject"]
    response = agent.post("/facts", sent)
    assert response.status_code == 400
    codes = {error["field"]: error["code"] for error in response.json()["errors"]}
    assert codes == {"subject": "required", "confidence": "invalid"}


def test_one_bad_field_keeps_the_single_error_shape(agent):
    response = agent.post("/facts", fact_body(predicate="core/likes"))
    assert response.status_code == 400
    body = response.json()
    assert body["field"] == "predicate"
    assert "errors" not in body
    assert set(body) == {"code", "message", "field", "did_you_mean"}


def test_several_bad_fields_name_the_nearest_valid_names_on_each(agent):
    response = agent.post("/facts", fact_body(predicate="core/uzes", source_type="agent-nots"))
    assert response.status_code == 400
    errors = {error["field"]: error for error in response.json()["errors"]}
    assert errors["predicate"]["code"] == "unknown_name"
    assert errors["predicate"]["did_you_mean"][0] == "core/uses"
    assert errors["source_type"]["did_you_mean"][0] == "agent-note"


def test_several_bad_query_parameters_are_reported_at_once(agent):
    response = agent.get("/truth", scope="project", limit="0", as_of="soon")
    assert response.status_code == 400
    assert {error["field"] for error in response.json()["errors"]} == {"limit", "as_of"}


# --- confidence (issue 31 §3) ------------------------------------------------------------


@pytest.mark.parametrize("confidence", [1.5, 1e9, -3, -0.01, 1.000001, 2])
def test_a_confidence_outside_zero_to_one_is_refused_naming_the_field(agent, confidence):
    before = counts()
    response = agent.post("/facts", fact_body(object="9.9.9", confidence=confidence))
    assert response.status_code == 400, response.content
    body = response.json()
    assert (body["code"], body["field"]) == ("invalid", "confidence")
    assert "between 0 and 1" in body["message"]
    assert counts() == before


@pytest.mark.parametrize("spelled", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_confidence_that_is_not_a_finite_number_is_refused(agent, spelled):
    before = counts()
    raw = json.dumps(fact_body(object="9.9.9", confidence=0.5)).replace("0.5", spelled)
    response = agent.post("/facts", raw=raw)
    assert response.status_code == 400, response.content
    assert response.json()["field"] == "confidence"
    assert counts() == before


@pytest.mark.parametrize("confidence", [0, 0.0, 1, 1.0])
def test_the_ends_of_the_scale_are_accepted(agent, confidence):
    response = agent.post("/facts", fact_body(subject=f"Edge{confidence!r}", confidence=confidence))
    assert response.status_code == 201, response.content


def test_an_answer_says_when_the_source_types_ceiling_capped_the_confidence(agent):
    response = agent.post(
        "/facts", fact_body(subject="Billing", source_type="agent-note", confidence=0.99)
    )
    assert response.status_code == 201
    body = response.json()
    assert body["confidence_clamped"] == {
        "asked": 0.99,
        "ceiling": 0.65,
        "ceiling_of": "agent-note",
    }
    assert body["fact"]["confidence"] == 0.65


def test_no_clamp_is_reported_below_the_ceiling_or_for_the_default(agent):
    below = agent.post("/facts", fact_body(subject="Search", confidence=0.9))
    assert below.json()["confidence_clamped"] is None
    # No confidence stated: the default (0.8) capped at 0.65 is nothing the caller asked.
    default = agent.post("/facts", fact_body(subject="Search2", source_type="agent-note"))
    assert default.json()["confidence_clamped"] is None
    assert default.json()["fact"]["confidence"] == 0.65


def test_a_reinforcement_above_the_ceiling_reports_the_clamp_too(agent):
    # The standing fact (code, 2.0.0) is reinforced by an agent-note at 0.9.
    response = agent.post("/facts", fact_body(source_type="agent-note", confidence=0.9))
    assert response.status_code == 200
    assert response.json()["status"] == "reinforced"
    assert response.json()["confidence_clamped"]["ceiling_of"] == "agent-note"
