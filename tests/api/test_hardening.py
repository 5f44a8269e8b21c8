"""Whatever goes wrong under /api/v1/, the answer is the JSON error shape (SPEC §10).

Unknown paths, methods a path does not take, bodies that are too large, not
JSON, not UTF-8 or not declared as JSON, too many query parameters, a cursor
from another list, a NUL in a time: each is a 4xx in JSON, with DEBUG on and
off, and writes nothing.
"""

import json
from pathlib import Path

import pytest
from django.test import Client

from accounts.actions import issue_token
from admissions.models import Record
from memories.write.actions import assert_fact
from tests.api.conftest import fact_body
from tests.api.test_errors import counts

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(params=[True, False], ids=["debug", "no-debug"])
def debug(request, settings) -> bool:
    """Both modes: with DEBUG, django-ninja and Django answer some errors differently."""
    settings.DEBUG = request.param
    return request.param


@pytest.fixture
def fact(member):
    return assert_fact(actor=member, data=fact_body()).fact


@pytest.fixture
def agent(member, agent_for):
    return agent_for(member)


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json; charset=utf-8"
    body = response.json()
    assert body["code"] == code
    assert body["message"]
    return body


# --- 404 and 405 ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/api/v1/", "/api/v1/no/such/thing", "/api/v1/facts/", "/api/v1/line%0Abreak", "/api/v1//"],
)
@pytest.mark.parametrize("method", ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"])
def test_a_path_that_is_no_operation_answers_json_404(agent, debug, path, method):
    response = agent.client.generic(method, path, headers=agent.headers)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json; charset=utf-8"
    if method != "HEAD":
        assert response.json() == {"code": "not_found", "message": "operation not found"}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/facts/{id}", "GET"),
        ("PATCH", "/facts/{id}", "GET"),
        ("DELETE", "/facts/{id}", "GET"),
        ("POST", "/facts/{id}", "GET"),
        ("GET", "/facts", "POST"),
        ("DELETE", "/facts", "POST"),
        ("GET", "/facts/{id}/invalidate", "POST"),
        ("PUT", "/truth", "GET"),
        ("GET", "/outcomes", "POST"),
        ("OPTIONS", "/conflicts", "GET"),
    ],
)
def test_a_method_a_path_does_not_take_answers_json_405_with_allow(
    agent, fact, debug, method, path, allowed
):
    before = counts()
    url = "/api/v1" + path.format(id=fact.pk)
    response = agent.client.generic(method, url, b"{}", "application/json", headers=agent.headers)
    body = assert_error(response, 405, "method_not_allowed")
    assert response["Allow"] == allowed
    assert method in body["message"] and allowed in body["message"]
    assert counts() == before


# --- bodies ----------------------------------------------------------------------------


def test_a_body_over_the_limit_answers_json_413_and_writes_nothing(agent, fact, debug, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    before = counts()
    for path, body in [
        ("/facts", fact_body(statement="x" * 20_000)),
        (f"/facts/{fact.pk}/challenges", {"ground": "x" * 20_000}),
    ]:
        body = assert_error(agent.post(path, body), 413, "too_large")
        assert "10000 bytes" in body["message"]
    assert counts() == before


def test_the_body_limit_is_documented_with_its_setting():
    errors = (DOCS / "api.md").read_text().split("## Errors")[1].split("\n## ")[0]
    assert "413" in errors and "DATA_UPLOAD_MAX_MEMORY_SIZE" in errors and "2.5 MB" in errors


@pytest.mark.parametrize(
    "encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "utf-8-sig"]
)
def test_a_body_that_is_not_utf8_json_is_refused_and_writes_nothing(agent, debug, encoding):
    before = counts()
    raw = json.dumps(fact_body(object="é 2.0.1"), ensure_ascii=False).encode(encoding)
    response = agent.client.post(
        "/api/v1/facts", raw, content_type="application/json", headers=agent.headers
    )
    assert_error(response, 400, "malformed")
    assert counts() == before


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain; charset=utf-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=utf-16",
        "application/json; charset=latin-1",
        "",
    ],
)
def test_a_body_not_declared_as_utf8_json_is_415_and_writes_nothing(agent, debug, content_type):
    before = counts()
    response = agent.client.generic(
        "POST",
        "/api/v1/facts",
        json.dumps(fact_body(object="2.0.1")).encode(),
        content_type,
        headers=agent.headers,
    )
    body = assert_error(response, 415, "unsupported_media_type")
    assert "application/json" in body["message"]
    assert counts() == before


@pytest.mark.parametrize("content_type", ["application/json", "Application/JSON; charset=UTF-8"])
def test_json_in_utf8_is_accepted_however_its_type_is_spelled(agent, content_type):
    response = agent.client.post(
        "/api/v1/facts",
        json.dumps(fact_body(object="2.0.1", statement="versión")).encode(),
        content_type=content_type,
        headers=agent.headers,
    )
    assert response.status_code == 201, response.content


# --- query strings ---------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/truth?scope=project&", "/conflicts?", "/facts/{id}?"])
def test_too_many_query_parameters_answer_json_400(agent, fact, debug, settings, path):
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    query = "&".join(f"p{n}=1" for n in range(limit + 1))
    url = "/api/v1" + path.format(id=fact.pk) + query
    body = assert_error(agent.client.get(url, headers=agent.headers), 400, "too_many_parameters")
    assert str(limit) in body["message"]


# --- cursors ---------------------------------------------------------------------------


@pytest.fixture
def two_pages_each(member, steward, agent_for):
    """Two admitted facts with two records each, and two conflicts: every list has two pages."""
    facts = []
    for n in range(2):
        fact = assert_fact(actor=member, data=fact_body(subject=f"svc-{n}", confidence=0.95)).fact
        assert_fact(
            actor=member,
            data=fact_body(subject=f"svc-{n}", object="3.0.0", source_type="agent-note"),
        )
        agent_for(steward).post(
            f"/facts/{fact.pk}/admissions", {"verdict": "admitted", "ground": "checked"}
        )
        # Without evidence: on the record, and the fact stays admitted.
        agent_for(member).post(f"/facts/{fact.pk}/challenges", {"ground": "doubtful"})
        facts.append(fact)
    assert Record.objects.count() == 4
    return facts


def test_a_cursor_from_another_list_is_refused_naming_cursor(agent, two_pages_each, debug):
    first, second = two_pages_each
    cursors = {
        "conflicts": agent.get("/conflicts", limit=1).json()["next"],
        "truth": agent.get("/truth", scope="project", limit=1).json()["next"],
        "records of one": agent.get(f"/facts/{first.pk}/records", limit=1).json()["next"],
    }
    assert all(cursors.values())
    for issued_by, cursor, path, query in [
        ("conflicts", cursors["conflicts"], f"/facts/{first.pk}/records", {}),
        ("conflicts", cursors["conflicts"], "/truth", {"scope": "project"}),
        ("truth", cursors["truth"], "/conflicts", {}),
        ("truth", cursors["truth"], f"/facts/{first.pk}/records", {}),
        ("records of one", cursors["records of one"], "/conflicts", {}),
        ("records of one", cursors["records of one"], f"/facts/{second.pk}/records", {}),
    ]:
        response = agent.get(path, cursor=cursor, limit=1, **query)
        body = assert_error(response, 400, "invalid")
        assert body["field"] == "cursor", (issued_by, path)


def test_a_cursor_still_pages_its_own_list(agent, two_pages_each):
    first, _ = two_pages_each
    for path, query in [
        ("/conflicts", {}),
        ("/truth", {"scope": "project"}),
        (f"/facts/{first.pk}/records", {}),
    ]:
        page = agent.get(path, limit=1, **query).json()
        following = agent.get(path, limit=1, cursor=page["next"], **query)
        assert following.status_code == 200, (path, following.content)
        assert following.json()["results"] != page["results"]


# --- a NUL in a time ---------------------------------------------------------------------


@pytest.mark.parametrize("value", ["\x00", "2026-01-01T00:00:00Z\x00", "\x002026-01-01"])
@pytest.mark.parametrize(
    ("path", "name"),
    [("/facts/{id}", "at"), ("/truth", "as_of"), ("/truth", "known_at")],
)
def test_a_nul_in_a_time_of_a_query_is_refused_naming_it(agent, fact, debug, path, name, value):
    query = {"scope": "project"} if path == "/truth" else {}
    response = agent.get(path.format(id=fact.pk), **query, **{name: value})
    body = assert_error(response, 400, "invalid")
    assert body["field"] == name
    assert "NUL" in body["message"]


@pytest.mark.parametrize("value", ["\x00", "2026-01-01T00:00:00Z\x00"])
@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/facts", "t_valid"),
        ("/facts", "t_invalid"),
        ("/facts/{id}/corrections", "t_valid"),
        ("/facts/{id}/corrections", "t_invalid"),
    ],
)
def test_a_nul_in_a_time_of_a_body_is_refused_naming_it_and_writes_nothing(
    agent, fact, debug, path, name, value
):
    before = counts()
    body = fact_body(object="9.9.9") if path == "/facts" else {"ground": "typo"}
    response = agent.post(path.format(id=fact.pk), {**body, name: value})
    body = assert_error(response, 400, "invalid")
    assert body["field"] == name
    assert "NUL" in body["message"]
    assert counts() == before


# --- refused before any view ---------------------------------------------------------


@pytest.mark.parametrize("host", ["claimgraph.example.org", "%Ac}lcpI![-M"])
def test_a_host_refused_before_any_view_answers_json_400_and_writes_nothing(agent, settings, host):
    # Production settings: with DEBUG on, Django shows its technical page instead.
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["claimgraph.example"]
    before = counts()
    response = agent.client.post(
        "/api/v1/facts",
        json.dumps(fact_body(object="9.9.9")),
        content_type="application/json",
        headers={**agent.headers, "Host": host},
    )
    assert_error(response, 400, "bad_request")
    assert counts() == before


def test_the_console_keeps_djangos_own_400_page_for_a_refused_host(settings):
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["claimgraph.example"]
    response = Client().get("/signin/", headers={"Host": "elsewhere.example"})
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")


# --- a defect of ours -------------------------------------------------------------------


def test_a_defect_of_ours_answers_json_500_and_is_logged(member, debug, settings, caplog):
    # A setting no environment helper would let through: the write limit's
    # check fails with a TypeError, standing in for any bug.
    settings.CLAIMGRAPH_API_WRITE_RATE = "600"
    _token, secret = issue_token(actor=member, name="tests")
    # The test client re-raises what Django signals as uncaught; here the
    # answer itself is under test.
    client = Client(raise_request_exception=False)
    response = client.post(
        "/api/v1/facts",
        json.dumps(fact_body()),
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert_error(response, 500, "server_error")
    [logged] = [r for r in caplog.records if r.name == "django.request"]
    assert logged.getMessage() == "Internal Server Error: /api/v1/facts"
    assert logged.exc_info[0] is TypeError


# --- the document ----------------------------------------------------------------------


def test_the_openapi_document_lists_415_for_every_write():
    from api.app import api

    document = api.get_openapi_schema(path_prefix="")
    for path, operations in document["paths"].items():
        if "post" in operations:
            assert 415 in operations["post"]["responses"], path
