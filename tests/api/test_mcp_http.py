"""MCP over Streamable HTTP: the SDK's own client against the live site (Django and /mcp/).

The tests commit their data (transactional tests) so the server's own
database connection sees it.
"""

import logging
import uuid

import httpx2
import pytest
from django.contrib.auth.models import User
from mcp.shared.exceptions import MCPError

from accounts.actions import issue_token
from admissions.actions import record_verdict
from admissions.models import Record
from api.mcp.guide import INSTRUCTIONS
from memories.store.models import Fact
from memories.write.actions import assert_fact
from tests.api.conftest import Agent, fact_body
from tests.api.mcp_client import body, call_http, over_http
from tests.deadlines import PROCESS_DEADLINE

# serialized_rollback: data migrations seed the vocabulary and the stewards group.
pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

TOOLS = {
    "assert_fact",
    "recall",
    "get_fact",
    "slot_history",
    "list_conflicts",
    "challenge_fact",
    "report_outcome",
    "invalidate_fact",
    "context",
    "list_scopes",
    "vocabulary",
    "search",
}


def post(url: str, **options) -> httpx2.Response:
    # httpx gives up after 5 s unless told otherwise; a busy machine may take longer.
    return httpx2.post(url, timeout=PROCESS_DEADLINE, **options)


def get(url: str, **options) -> httpx2.Response:
    return httpx2.get(url, timeout=PROCESS_DEADLINE, **options)


def token(user: User) -> str:
    _token, secret = issue_token(actor=user, name="agent")
    return secret


def standing_version(steward, *, admit: bool = True):
    """Seed 000's example 3: AuthService is at 2.0.0, read in the code."""
    fact = assert_fact(actor=steward, data=fact_body(object="2.0.0", confidence=0.95)).fact
    if admit:
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="in the code")
    return fact


def test_the_server_lists_its_tools_with_schemas_and_instructions(mcp_url, member):
    async def listing(session):
        return await session.list_tools(), session.initialize_result

    tools, initialized = over_http(mcp_url, token(member), listing)
    assert {tool.name for tool in tools.tools} == TOOLS
    for tool in tools.tools:
        assert tool.description and tool.input_schema["type"] == "object"
        assert tool.output_schema is not None
    assert_fact = next(tool for tool in tools.tools if tool.name == "assert_fact")
    assert set(assert_fact.input_schema["required"]) == {
        "scope",
        "subject",
        "predicate",
        "object",
        "source_type",
    }
    assert "trusted" in assert_fact.input_schema["properties"]["source_type"]["description"]
    assert initialized.instructions == INSTRUCTIONS
    assert "do not pick a winner" in INSTRUCTIONS


def test_an_outranked_assertion_is_flagged_with_its_candidates(mcp_url, member, steward):
    standing = standing_version(steward)
    result = call_http(
        mcp_url,
        token(member),
        "assert_fact",
        fact_body(object="3.0.0", source_type="agent-note"),
    )
    assert not result.is_error
    answer = body(result)
    assert (answer["status"], answer["reason"]) == ("flagged", "outranked")
    assert [candidate["id"] for candidate in answer["candidates"]] == [str(standing.pk)]
    assert answer["fact"]["disputed"] is True
    assert answer["conflict"] is not None
    # The first text an agent reads says what to do with the candidates.
    assert result.content[0].text == answer["instruction"]
    assert "Show the candidates to a human" in answer["instruction"]
    assert "do not pick a winner" in answer["instruction"]


def test_recall_leaves_out_a_disputed_value_and_reports_it_when_asked(mcp_url, member, steward):
    standing = standing_version(steward)
    disputed = assert_fact(
        actor=member, data=fact_body(object="3.0.0", source_type="agent-note")
    ).fact
    secret = token(member)

    truth = body(call_http(mcp_url, secret, "recall", {"scope": "project"}))
    assert [fact["object"] for fact in truth["results"]] == ["2.0.0"]
    assert truth["contested"] is None

    contested = body(call_http(mcp_url, secret, "recall", {"scope": "project", "contested": True}))
    assert [fact["object"] for fact in contested["results"]] == ["2.0.0"]
    (slot,) = contested["contested"]
    assert (slot["subject"], slot["predicate"]) == ("AuthService", "core/has-version")
    assert (slot["showing"], slot["standing"]) == ("contested", [str(standing.pk)])
    (value,) = slot["values"]
    assert value["fact"]["id"] == str(disputed.pk)
    assert value["disputes"][0]["kind"] == "outranked"
    assert value["disputes"][0]["candidates"] == [str(standing.pk)]


def test_context_is_the_digest_within_its_budget(mcp_url, member, steward):
    standing_version(steward)
    assert_fact(actor=member, data=fact_body(object="3.0.0", source_type="agent-note"))
    secret = token(member)

    full = call_http(mcp_url, secret, "context", {"scope": "project"})
    assert full.content[0].text == body(full)["markdown"]
    assert '  - contested by "3.0.0" (agent-note' in full.content[0].text

    small = body(call_http(mcp_url, secret, "context", {"scope": "project", "budget": 200}))
    assert len(small["markdown"]) <= 200
    assert small["omitted"]["conflicts"] == 1


def test_without_a_valid_token_the_answer_is_401_before_any_tool_runs(mcp_url, member):
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    for authorization in (None, "Bearer not-a-token", "Basic bWlyYTpwdw=="):
        sent = {**headers, **({"Authorization": authorization} if authorization else {})}
        response = post(mcp_url, json=initialize, headers=sent)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
    # A deactivated account's token is no token.
    secret = token(member)
    User.objects.filter(pk=member.pk).update(is_active=False)
    response = post(
        mcp_url, json=initialize, headers={**headers, "Authorization": f"Bearer {secret}"}
    )
    assert response.status_code == 401


def test_another_scopes_fact_is_indistinguishable_from_a_missing_one(
    mcp_url, member, steward, outsider
):
    fact = standing_version(steward)
    secret = token(outsider)
    hidden = call_http(mcp_url, secret, "get_fact", {"fact_id": str(fact.pk)})
    missing = call_http(mcp_url, secret, "get_fact", {"fact_id": str(uuid.uuid4())})
    assert hidden.is_error and missing.is_error
    assert body(hidden) == body(missing) == {"code": "not_found", "message": "fact not found"}

    hidden_scope = call_http(mcp_url, secret, "recall", {"scope": "project"})
    missing_scope = call_http(mcp_url, secret, "recall", {"scope": "nowhere"})
    assert body(hidden_scope) == body(missing_scope)
    write = call_http(mcp_url, secret, "assert_fact", fact_body(object="4.0"))
    assert body(write)["code"] == "not_found"


def test_the_write_limit_is_the_json_apis(mcp_url, member, settings):
    settings.CLAIMGRAPH_API_WRITE_RATE = 2
    secret = token(member)
    answers = [
        call_http(mcp_url, secret, "assert_fact", fact_body(object=f"{i}.0", bucket="user"))
        for i in range(3)
    ]
    assert [answer.is_error for answer in answers] == [False, False, True]
    refusal = body(answers[2])
    assert refusal["code"] == "rate_limited"
    assert "2 writes a minute" in refusal["message"]
    # Reads are never charged.
    assert not call_http(mcp_url, secret, "recall", {"scope": "project"}).is_error
    # The JSON API draws on the same allowance.
    assert Agent(secret).post("/facts", fact_body(object="9.0")).status_code == 429


BAD_BODIES = [
    fact_body(confidence="high"),
    fact_body(confidence=True),
    fact_body(predicate="core/unknown"),
    fact_body(evidence=[{"ref": 5}]),
    fact_body(t_valid="yesterday"),
    fact_body(subject="Auth\x00Service"),
    {**fact_body(), "admission": "admitted"},
    {"scope": "project"},
]


def test_bad_input_gets_the_json_apis_answer_as_a_tool_error(mcp_url, member):
    secret = token(member)
    # One session for all: a refusal never ends it.
    results = over_http(
        mcp_url,
        secret,
        lambda session: _each(session, [("assert_fact", arguments) for arguments in BAD_BODIES]),
    )
    for arguments, result in zip(BAD_BODIES, results, strict=True):
        assert result.is_error, arguments
        over_rest = Agent(secret).post("/facts", arguments)
        assert over_rest.status_code == 400
        assert body(result) == over_rest.json()
        # One bad field is named in `field`; several are each named in `errors`.
        assert body(result).get("field") or all(e["field"] for e in body(result)["errors"])


async def _each(session, calls):
    return [await session.call_tool(name, arguments) for name, arguments in calls]


def test_a_session_survives_its_refusals(mcp_url, member):
    async def several(session):
        refused = await session.call_tool("get_fact", {"fact_id": "not-a-uuid"})
        unknown = await session.call_tool("recall", {"scope": "project", "sort": "new"})
        fine = await session.call_tool("assert_fact", fact_body(object="1.0", bucket="user"))
        return refused, unknown, fine

    refused, unknown, fine = over_http(mcp_url, token(member), several)
    assert body(refused)["code"] == "not_found"
    assert body(unknown) == {
        "code": "invalid",
        "message": "sort is not a parameter of this operation",
        "field": "sort",
    }
    assert body(fine)["status"] == "created"


def test_every_tool_acts_as_the_tokens_account(mcp_url, member, author, steward):
    standing = standing_version(steward)
    mine = assert_fact(actor=member, data=fact_body(subject="shoply", object="1.0")).fact
    secret = token(member)

    fact = body(call_http(mcp_url, secret, "get_fact", {"fact_id": str(standing.pk)}))
    assert fact["admission"]["status"] == "admitted"
    assert fact["admission"]["explanation"]

    history = body(
        call_http(
            mcp_url,
            secret,
            "slot_history",
            {"scope": "project", "subject": "AuthService", "predicate": "core/has-version"},
        )
    )
    assert [version["ended"]["how"] for version in history["results"]] == ["live"]

    outcome = body(call_http(mcp_url, secret, "report_outcome", {"fact_ids": [str(standing.pk)]}))
    assert outcome["fact_ids"] == [str(standing.pk)]

    challenge = body(
        call_http(
            mcp_url,
            secret,
            "challenge_fact",
            {"fact_id": str(standing.pk), "ground": "the lock file says 2.1", "evidence": ["x"]},
        )
    )
    assert (challenge["role"], challenge["author"]) == ("challenge", member.username)

    # Only the author or a steward may invalidate: the JSON API's 403.
    refused = call_http(
        mcp_url, token(author), "invalidate_fact", {"fact_id": str(mine.pk), "reason": "no"}
    )
    assert body(refused)["code"] == "forbidden"
    ended = body(
        call_http(mcp_url, secret, "invalidate_fact", {"fact_id": str(mine.pk), "reason": "gone"})
    )
    assert ended["status"] == "invalidated"
    again = call_http(
        mcp_url, secret, "invalidate_fact", {"fact_id": str(mine.pk), "reason": "gone"}
    )
    assert body(again)["code"] == "state_conflict"

    conflicts = body(call_http(mcp_url, secret, "list_conflicts", {"scope": "project"}))
    assert conflicts == {"results": [], "next": None}


def test_mcp_answers_for_djangos_hosts_only_and_carries_security_headers(mcp_url, site):
    response = post(mcp_url, json={})
    assert response.status_code == 401
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["referrer-policy"] == "same-origin"
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert response.headers["cache-control"] == "no-store"

    for host in ("evil.example", "127.0.0.1.evil.example", ""):
        refused = post(mcp_url, json={}, headers={"Host": host})
        assert refused.status_code == 400, host
    assert post(mcp_url, json={}, headers={"Host": "localhost:1"}).status_code == 401

    page = post(mcp_url, json={}, headers={"Origin": "https://evil.example"})
    assert page.status_code == 403
    same_site = post(mcp_url, json={}, headers={"Origin": site})
    assert same_site.status_code == 401

    # "/mcp" without its slash keeps the method.
    moved = post(mcp_url.rstrip("/"), json={})
    assert (moved.status_code, moved.headers["location"]) == (308, "/mcp/")


def test_django_still_answers_beside_mcp_with_its_own_middleware(site):
    page = get(f"{site}/signin/")
    assert page.status_code == 200
    assert "nonce-" in page.headers["content-security-policy"]
    assert get(f"{site}/signin/", headers={"Host": "evil.example"}).status_code == 400
    api = get(f"{site}/api/v1/truth?scope=project")
    assert (api.status_code, api.json()["code"]) == (401, "unauthenticated")


def test_outside_debug_mcp_asks_for_https_as_django_does(mcp_url, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 3600
    plain = post(f"{mcp_url}?x=1", json={})
    assert plain.status_code == 308
    assert plain.headers["location"] == mcp_url.replace("http://", "https://") + "?x=1"
    proxied = post(mcp_url, json={}, headers={"X-Forwarded-Proto": "https"})
    assert proxied.status_code == 401
    assert proxied.headers["strict-transport-security"].startswith("max-age=3600")


# --- requests the SDK would take for notifications -----------------------------------------


@pytest.mark.parametrize("request_id", [None, 1.5, {"n": 1}, True, "absent"])
def test_a_tools_call_with_an_invalid_id_or_none_is_an_invalid_request(mcp_url, member, request_id):
    # The SDK read these as notifications: 202, and the write never ran.
    message = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": "assert_fact", "arguments": fact_body()},
    }
    if request_id != "absent":
        message["id"] = request_id
    response = post(
        mcp_url,
        json=message,
        headers={
            "Authorization": f"Bearer {token(member)}",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert response.status_code == 400
    answer = response.json()
    assert (answer["jsonrpc"], answer["id"], answer["error"]["code"]) == ("2.0", None, -32600)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert not Fact.objects.exists()


def test_a_real_notification_is_still_accepted(mcp_url, member):
    response = post(
        mcp_url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={
            "Authorization": f"Bearer {token(member)}",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert response.status_code == 202


def test_an_unknown_prompt_is_invalid_params_and_logs_nothing(mcp_url, member, caplog):
    async def ask(session):
        try:
            await session.get_prompt("nothing-here")
        except MCPError as refused:
            return refused.error
        raise AssertionError("an unknown prompt was answered")

    caplog.set_level(logging.DEBUG)
    error = over_http(mcp_url, token(member), ask)
    assert error.code == -32602
    assert "nothing-here" in error.message
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert not [record for record in caplog.records if record.exc_info]


def test_challenge_fact_answers_its_effect_and_refuses_a_second_open_one(mcp_url, member, steward):
    standing = standing_version(steward)
    secret = token(member)
    arguments = {"fact_id": str(standing.pk), "ground": "the lock file says 2.1", "evidence": ["x"]}

    filed = body(call_http(mcp_url, secret, "challenge_fact", arguments))
    # One admitted fact: a cap of 1, and this is the member's first.
    assert (filed["effect"], filed["flood_cap"]) == ("suspended", 1)
    assert filed["effect_reason"].startswith("Suspends the fact until a steward refutes it.")

    again = call_http(mcp_url, secret, "challenge_fact", arguments)
    assert again.is_error
    refused = body(again)
    assert refused["code"] == "challenge_already_open"
    assert filed["id"] in refused["message"]
    assert Record.objects.challenges().count() == 1
