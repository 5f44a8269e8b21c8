"""The MCP transport's edges (issue 31 §3's 401 body, §4; issue 29 §11's GET stream).

Each against a live server: raw HTTP for what a client must not be able to
do, and the SDK's own Streamable HTTP client for what it must still do.
"""

import time

import httpx2
import pytest

from accounts.actions import issue_token
from memories.store.models import Fact
from tests.api.mcp_client import over_http
from tests.deadlines import PROCESS_DEADLINE

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def secret(member) -> str:
    return issue_token(actor=member, name="agent")[1]


def send(method: str, url: str, **options) -> httpx2.Response:
    return httpx2.request(method, url, timeout=PROCESS_DEADLINE, **options)


def initialize(version: str = "2025-06-18") -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }


def call(tool: str = "recall", request_id: int = 2) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {"scope": "acme", "subject": "AuthService"}},
    }


def headers(secret: str, **extra: str) -> dict[str, str]:
    return {**ACCEPT, "Authorization": f"Bearer {secret}", **extra}


def test_the_401_has_the_apis_error_shape(mcp_url):
    for authorization in (None, "Bearer not-a-token"):
        sent = {**ACCEPT, **({"Authorization": authorization} if authorization else {})}
        response = send("POST", mcp_url, json=initialize(), headers=sent)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        found = response.json()
        assert found["code"] == "unauthenticated"
        assert found["message"]


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_answer_405_at_once_with_allow_post(mcp_url, secret, method):
    started = time.monotonic()
    response = send(method, mcp_url, headers=headers(secret, **{"Mcp-Session-Id": "abc"}))
    assert time.monotonic() - started < 5
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()["code"] == "method_not_allowed"
    # Without a token as well: nothing is held open for anyone.
    assert send(method, mcp_url, headers=ACCEPT).status_code == 405


def test_a_session_id_header_is_ignored(mcp_url, secret):
    sent = headers(secret, **{"Mcp-Session-Id": "no-such-session"})
    response = send("POST", mcp_url, json=initialize(), headers=sent)
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers
    answered = send("POST", mcp_url, json=call(), headers=sent)
    assert answered.status_code == 200, answered.text
    assert "mcp-session-id" not in answered.headers


@pytest.mark.parametrize("modern", [False, True], ids=["2025 handshake", "2026-07-28"])
def test_the_sdk_client_works_with_a_stale_session_id_on_every_request(mcp_url, secret, modern):
    async def work(session):
        return await session.call_tool("recall", {"scope": "acme", "subject": "AuthService"})

    stale = {"Mcp-Session-Id": "left-over-from-another-server"}
    result = over_http(mcp_url, secret, work, headers=stale, modern=modern)
    # A refusal from the tool itself (no such scope), not from the transport.
    assert result.structured_content["code"] == "not_found"


def test_routing_headers_must_match_the_body(mcp_url, secret):
    matching = headers(secret, **{"Mcp-Method": "tools/call", "Mcp-Name": "recall"})
    assert send("POST", mcp_url, json=call(), headers=matching).status_code == 200
    for wrong in (
        {"Mcp-Method": "tools/list"},
        {"Mcp-Method": "tools/call", "Mcp-Name": "assert_fact"},
        {"Mcp-Name": "assert_fact"},
        {"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?YXNzZXJ0X2ZhY3Q=?="},
    ):
        response = send("POST", mcp_url, json=call(), headers=headers(secret, **wrong))
        assert response.status_code == 400, wrong
        error = response.json()
        assert error["jsonrpc"] == "2.0"
        assert error["id"] == 2
        # Header Mismatch, the code the 2026-07-28 revision gives this fault.
        assert error["error"]["code"] == -32020
        assert "header" in error["error"]["message"]
    # A name is compared after the spec's base64 decoding.
    encoded = headers(secret, **{"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?cmVjYWxs?="})
    assert send("POST", mcp_url, json=call(), headers=encoded).status_code == 200
    # Absent headers (a 2025 client) are fine.
    assert send("POST", mcp_url, json=call(), headers=headers(secret)).status_code == 200


def test_a_name_header_on_a_method_that_names_nothing_is_refused(mcp_url, secret):
    listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    sent = headers(secret, **{"Mcp-Method": "tools/list", "Mcp-Name": "recall"})
    response = send("POST", mcp_url, json=listing, headers=sent)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32020


def test_a_routing_header_sent_twice_is_refused(mcp_url, secret):
    sent = [
        *headers(secret).items(),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Method", "tools/call"),
    ]
    response = send("POST", mcp_url, json=call(), headers=sent)
    assert response.status_code == 400
    assert "more than once" in response.json()["error"]["message"]


def test_a_refused_header_writes_nothing(mcp_url, secret):
    write = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {
            "name": "assert_fact",
            "arguments": {
                "scope": "project",
                "subject": "AuthService",
                "predicate": "core/has-version",
                "object": "9.9.9",
                "source_type": "agent-note",
            },
        },
    }
    sent = headers(secret, **{"Mcp-Method": "tools/call", "Mcp-Name": "recall"})
    assert send("POST", mcp_url, json=write, headers=sent).status_code == 400
    assert not Fact.objects.filter(object_lit="9.9.9").exists()


@pytest.mark.parametrize("modern", [False, True], ids=["2025 handshake", "2026-07-28"])
def test_the_sdk_client_sends_routing_headers_that_match(mcp_url, secret, modern):
    # The SDK's client sends MCP-Protocol-Version, Mcp-Method and Mcp-Name on
    # every call, in both eras; they pass.
    async def work(session):
        return await session.call_tool("recall", {"scope": "acme", "subject": "AuthService"})

    result = over_http(mcp_url, secret, work, modern=modern)
    assert result.structured_content["code"] == "not_found"


def test_the_protocol_version_header_is_validated(mcp_url, secret):
    for version in ("2025-06-18", "2025-03-26", "2025-11-25", "2024-11-05"):
        sent = headers(secret, **{"MCP-Protocol-Version": version})
        assert send("POST", mcp_url, json=call(), headers=sent).status_code == 200, version
    for version in ("1999-01-01", "latest", "", "2026-13-01"):
        sent = headers(secret, **{"MCP-Protocol-Version": version})
        response = send("POST", mcp_url, json=call(), headers=sent)
        assert response.status_code == 400, version
        assert "MCP-Protocol-Version" in response.text
        error = response.json()["error"]
        # Unsupported Protocol Version, with the list the SDK's client reads to retry.
        assert error["code"] == -32022
        assert error["data"]["supported"] == [
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28",
        ]
        assert error["data"]["requested"] == version
        assert "2025-11-25" in error["message"]
    # Absent, the spec's default revision (2025-03-26) is assumed.
    assert send("POST", mcp_url, json=call(), headers=headers(secret)).status_code == 200


def test_an_unknown_protocol_version_is_refused_before_the_token_is_read(mcp_url):
    sent = {**ACCEPT, "MCP-Protocol-Version": "1999-01-01"}
    response = send("POST", mcp_url, json=call(), headers=sent)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32022


@pytest.mark.parametrize("modern", [False, True], ids=["2025 handshake", "2026-07-28"])
def test_the_sdk_client_negotiates_a_served_version(mcp_url, secret, modern):
    async def work(session):
        return session.initialize_result or session.discover_result

    result = over_http(mcp_url, secret, work, modern=modern)
    if modern:
        assert "2026-07-28" in result.supported_versions
    else:
        assert result.protocol_version == "2025-11-25"


def test_tools_are_listed_in_a_fixed_order(mcp_url, secret):
    def names():
        return [t.name for t in over_http(mcp_url, secret, lambda s: s.list_tools()).tools]

    assert names() == [
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
    ]
    assert names() == names()


def test_the_sdk_client_still_works_with_get_and_delete_refused(mcp_url, secret, caplog):
    async def work(session):
        return await session.list_tools()

    assert len(over_http(mcp_url, secret, work).tools) == 12


ORIGIN_CASES = [
    ("{site}", True),
    ("http://localhost:9999", False),
    ("http://127.0.0.1:1", False),
    ("https://{hostport}", False),
    ("http://LOCALHOST:{port}", False),
    ("http://localhost:{port}", False),
    ("https://evil.example", False),
    ("null", False),
    ("http://trusted.example", True),
    ("https://trusted.example", False),
    ("https://sub.wild.example", True),
    ("https://wild.example.evil", False),
]


@pytest.mark.parametrize(("origin", "accepted"), ORIGIN_CASES)
def test_the_origin_check_compares_the_whole_origin(mcp_url, site, settings, origin, accepted):
    settings.CSRF_TRUSTED_ORIGINS = ["http://trusted.example", "https://*.wild.example"]
    hostport = site.removeprefix("http://")
    port = hostport.rsplit(":", 1)[1]
    origin = origin.format(site=site, hostport=hostport, port=port)
    response = send("POST", mcp_url, json={}, headers={"Origin": origin})
    assert response.status_code == (401 if accepted else 403), origin


def test_with_every_host_allowed_another_origin_is_still_refused(mcp_url, site, settings):
    settings.ALLOWED_HOSTS = ["*"]
    settings.CSRF_TRUSTED_ORIGINS = []
    refused = send("POST", mcp_url, json={}, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert send("POST", mcp_url, json={}, headers={"Origin": site}).status_code == 401
