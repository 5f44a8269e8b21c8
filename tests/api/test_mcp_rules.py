"""The MCP face's small rules, without a server: its instructions and its Host and Origin checks."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from api.mcp.guide import GUIDE, INSTRUCTIONS, agent_section
from api.mcp.http import host_allowed, origin_allowed, security_headers


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
