"""The MCP face's small rules, without a server: instructions, Host, Origin, request headers."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from mcp_types import HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION

from api.mcp.guide import GUIDE, INSTRUCTIONS, agent_section
from api.mcp.http import host_allowed, origin_allowed, security_headers
from api.mcp.wire import SUPPORTED_VERSIONS, header_mismatch, unsupported_version


def test_the_instructions_are_the_agents_section_of_the_doc():
    text = GUIDE.read_text(encoding="utf-8")
    assert agent_section(text) == INSTRUCTIONS
    assert INSTRUCTIONS in text
    assert "\n## " not in INSTRUCTIONS
    for must in ("source_type", "epistemic", "reinforced", "superseded", "flagged"):
        assert must in INSTRUCTIONS


@pytest.mark.parametrize(
    ("text", "section"),
    [
        ("# Doc\n\n## For the agent\n\nDo this.\n\n## Other\n\nNot this.\n", "Do this."),
        ("# Doc\n\n## For the agent\nLast.\n### Sub\nStill.\n", "Last.\n### Sub\nStill."),
    ],
)
def test_the_section_ends_at_the_next_heading_of_its_level(text, section):
    assert agent_section(text) == section


def test_a_doc_without_the_section_stops_the_start():
    with pytest.raises(ImproperlyConfigured):
        agent_section("# Doc\n\n## For the operator\n")


@pytest.mark.parametrize(
    ("allowed", "host", "expected"),
    [
        (["claimgraph.example.org"], "claimgraph.example.org", True),
        (["claimgraph.example.org"], "claimgraph.example.org:8443", True),
        (["claimgraph.example.org"], "evil.example", False),
        (["claimgraph.example.org"], "claimgraph.example.org.evil.example", False),
        ([".example.org"], "memory.example.org", True),  # what the SDK's own list cannot say
        ([".example.org"], "example.org", True),
        (["*"], "anything.example", True),
        (["claimgraph.example.org"], "", False),
        (["claimgraph.example.org"], "claimgraph.example.org:bad port", False),
    ],
)
def test_mcp_accepts_the_hosts_django_accepts(settings, allowed, host, expected):
    settings.ALLOWED_HOSTS = allowed
    assert host_allowed(host) is expected


@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        (None, True),  # not a browser
        ("https://claimgraph.example.org", True),
        ("https://trusted.example.net", True),
        ("https://evil.example", False),
        ("null", False),
        ("file://claimgraph.example.org", False),
    ],
)
def test_a_page_on_another_site_cannot_drive_the_tools(settings, origin, expected):
    settings.ALLOWED_HOSTS = ["claimgraph.example.org"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://trusted.example.net"]
    assert origin_allowed(origin, "https://claimgraph.example.org") is expected


def test_hsts_only_over_https(settings):
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = False
    assert (b"strict-transport-security", b"max-age=3600; includeSubDomains") in (
        security_headers(secure=True)
    )
    assert b"strict-transport-security" not in dict(security_headers(secure=False))


# --- the request headers (api/mcp/wire.py) -------------------------------------------

CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "recall"}}
READ = {"jsonrpc": "2.0", "id": 8, "method": "resources/read", "params": {"uri": "memo://a"}}
NOTE = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.mark.parametrize(
    ("body", "headers", "refused"),
    [
        (CALL, [], False),  # a 2025 client sends neither
        (CALL, [("mcp-method", "tools/call")], False),
        (CALL, [("mcp-method", "tools/call"), ("mcp-name", "recall")], False),
        (CALL, [("mcp-name", "=?base64?cmVjYWxs?=")], False),  # "recall", base64
        (READ, [("mcp-method", "resources/read"), ("mcp-name", "memo://a")], False),
        (NOTE, [("mcp-method", "notifications/initialized")], False),
        (CALL, [("mcp-method", "tools/list")], True),
        (CALL, [("mcp-method", "Tools/Call")], True),  # compared exactly
        (CALL, [("mcp-name", "assert_fact")], True),
        (CALL, [("mcp-name", "=?base64?not base64?=")], True),
        (READ, [("mcp-name", "memo://b")], True),
        (NOTE, [("mcp-name", "recall")], True),  # names something the method does not
        (CALL, [("mcp-method", "tools/call"), ("mcp-method", "tools/call")], True),
        ([CALL], [("mcp-method", "tools/call")], True),  # a batch is not one message
        (None, [("mcp-method", "tools/call")], True),  # not JSON
    ],
)
def test_routing_headers_must_say_what_the_body_says(body, headers, refused):
    refusal = header_mismatch(body, [("accept", "application/json"), *headers])
    assert (refusal is not None) == refused
    if refusal is not None:
        assert refusal.error.code == HEADER_MISMATCH
        assert refusal.id == (body.get("id") if isinstance(body, dict) else None)


@pytest.mark.parametrize(
    ("sent", "refused"),
    [
        ([], False),  # absent: the spec's default revision
        ([("mcp-protocol-version", "2024-11-05")], False),
        ([("mcp-protocol-version", "2025-11-25")], False),
        ([("mcp-protocol-version", "2026-07-28")], False),
        ([("mcp-protocol-version", "")], True),
        ([("mcp-protocol-version", "latest")], True),
        ([("mcp-protocol-version", "2025-11-25"), ("mcp-protocol-version", "2025-11-25")], True),
    ],
)
def test_a_protocol_version_header_must_name_a_served_revision(sent, refused):
    refusal = unsupported_version(sent)
    assert (refusal is not None) == refused
    if refusal is not None:
        assert refusal.error.code == UNSUPPORTED_PROTOCOL_VERSION
        assert "MCP-Protocol-Version" in refusal.error.message
        assert refusal.error.data["supported"] == list(SUPPORTED_VERSIONS)
