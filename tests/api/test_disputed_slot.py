"""Issue 31 §3: one rule for what a disputed slot shows, in recall and the digest alike.

The issue's reproduction: 2.0.0 stands (code, admitted); one agent-note
asserts 9.9.9 and is flagged. The digest listed 2.0.0 under "Current truth"
and again as "unknown — disputed", while recall returned 2.0.0. Each read is
held here over the JSON API and over MCP (the SDK's client against a live
server): recall and the digest agree, and no value is listed twice.
"""

import re

import pytest

from accounts.actions import issue_token
from admissions.actions import record_verdict
from memories.write.actions import assert_fact
from tests.api.conftest import Agent, fact_body
from tests.api.mcp_client import body, call_http

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


@pytest.fixture
def reproduction(steward, member):
    standing = assert_fact(actor=steward, data=fact_body(object="2.0.0", confidence=0.95)).fact
    record_verdict(actor=steward, fact_id=standing.pk, verdict="admitted", ground="in the code")
    flagged = assert_fact(actor=member, data=fact_body(object="9.9.9", source_type="agent-note"))
    assert flagged.status == "flagged"
    return {"standing": standing, "disputed": flagged.fact}


@pytest.fixture
def secret(member) -> str:
    return issue_token(actor=member, name="agent")[1]


def sections(markdown: str) -> dict[str, str]:
    """The digest's sections by title, each with its text."""
    parts = re.split(r"^## (.+)$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def listed(text: str) -> list[str]:
    """The fact ids a digest text lists, in order."""
    return re.findall(r" fact ([0-9a-f-]{36})$", text, flags=re.MULTILINE)


def assert_recall_and_digest_agree(truth: dict, digest: dict, standing, disputed) -> None:
    # Recall: 2.0.0 is current; 9.9.9 contests it, none chosen.
    assert [fact["id"] for fact in truth["results"]] == [str(standing.pk)]
    (slot,) = truth["contested"]
    assert slot["showing"] == "contested"
    assert slot["standing"] == [str(standing.pk)]
    assert [value["fact"]["id"] for value in slot["values"]] == [str(disputed.pk)]

    # The digest: the same current value, once, with what contests it under it.
    markdown = digest["markdown"]
    found = sections(markdown)
    assert "Unknown — disputed" not in found
    assert listed(found["Current truth"]) == [str(standing.pk), str(disputed.pk)]
    assert listed(markdown).count(str(standing.pk)) == 1
    assert listed(markdown).count(str(disputed.pk)) == 1
    assert f'"2.0.0" (code, 0.95; contested) fact {standing.pk}' in markdown
    assert '  - contested by "9.9.9" (agent-note, 0.65, disputed; outranked; conflict ' in (
        markdown
    )
    assert digest["shown"] == {"commitments": 0, "facts": 1, "conflicts": 1}


def test_the_json_apis_recall_and_digest_agree_on_a_disputed_slot(reproduction, secret):
    agent = Agent(secret)
    truth = agent.get("/truth", scope="project", subject="AuthService", contested="true").json()
    digest = agent.get("/context", scope="project").json()
    assert_recall_and_digest_agree(truth, digest, **reproduction)


def test_mcps_recall_and_context_agree_on_a_disputed_slot(reproduction, secret, mcp_url):
    query = {"scope": "project", "subject": "AuthService", "contested": True}
    truth = body(call_http(mcp_url, secret, "recall", query))
    digest = body(call_http(mcp_url, secret, "context", {"scope": "project"}))
    assert_recall_and_digest_agree(truth, digest, **reproduction)


def test_a_slot_whose_standing_value_is_not_served_is_unknown_in_both(steward, member, secret):
    # 2.0.0 awaits a verdict: recall serves nothing on the slot, so nothing in
    # the conflict is current, and both reads say "unknown".
    standing = assert_fact(actor=steward, data=fact_body(object="2.0.0", confidence=0.95)).fact
    disputed = assert_fact(
        actor=member, data=fact_body(object="9.9.9", source_type="agent-note")
    ).fact
    agent = Agent(secret)
    truth = agent.get("/truth", scope="project", contested="true").json()
    assert truth["results"] == []
    (slot,) = truth["contested"]
    assert (slot["showing"], slot["standing"]) == ("unknown", [])

    found = sections(agent.get("/context", scope="project").json()["markdown"])
    assert list(found) == ["Unknown — disputed"]
    # Both members side by side, by recorded time, none chosen.
    assert listed(found["Unknown — disputed"]) == [str(standing.pk), str(disputed.pk)]
    assert "(code, 0.95, not served)" in found["Unknown — disputed"]


def test_a_commitment_contested_by_a_stance_is_listed_once(steward, member, secret):
    commitment = assert_fact(
        actor=steward,
        data=fact_body(
            subject="api-layer",
            predicate="core/decided-against",
            object="GraphQL",
            source_type="decision-record",
            epistemic="commitment",
        ),
    ).fact
    record_verdict(actor=steward, fact_id=commitment.pk, verdict="admitted", ground="the ADR")
    stance = assert_fact(
        actor=member,
        data=fact_body(
            subject="api-layer",
            predicate="core/prefers",
            object="GraphQL",
            source_type="session-log",
        ),
    ).fact
    agent = Agent(secret)
    truth = agent.get("/truth", scope="project", contested="true").json()
    (slot,) = truth["contested"]
    assert (slot["predicate"], slot["showing"]) == ("core/prefers", "contested")
    assert slot["standing"] == [str(commitment.pk)]

    found = sections(agent.get("/context", scope="project").json()["markdown"])
    assert list(found) == ["Commitments"]
    assert listed(found["Commitments"]) == [str(commitment.pk), str(stance.pk)]
    assert (
        '  - contested by core/prefers "GraphQL" (session-log, 0.70, disputed;'
        in (found["Commitments"])
    )
