"""Issue 30 item 3, reproduced on the demo's data in a real browser.

Reject "billing core/has-version 5.1" (badged "In an open conflict") from the
Candidates queue: its conflict closes, the dashboard stops counting it, and
its page says why it closed and offers no Keep this. Admit "api-layer
core/prefers GraphQL": the queue said beforehand that admitting does not
settle its conflict, and the message after it links the conflict, still open.
"""

import os
import re
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from memories.store.models import Conflict
from memories.write.actions import assert_fact
from tests.browser.conftest import PASSWORD, needs_browser, sign_in

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

# Screenshots for a person to look at, when asked for (not committed).
SHOTS = os.environ.get("CLAIMGRAPH_SHOTS")


def photograph(page, name: str) -> None:
    if not SHOTS:
        return
    Path(SHOTS).mkdir(parents=True, exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=Path(SHOTS) / f"{name}-{width}.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def row(page, text: str):
    return page.locator("tr[data-queue-item]").filter(has_text=text)


def open_conflicts(page) -> int:
    page.goto("/")
    label = page.locator("a.count").first.get_attribute("aria-label")
    assert label.endswith("open conflicts"), label
    return int(re.match(r"\d+", label).group())


@pytest.fixture
def demo():
    call_command("seed_demo", stdout=StringIO())
    steward = User.objects.get(username="steward")
    steward.set_password(PASSWORD)
    steward.save()


def test_rejecting_a_candidate_in_a_conflict_closes_it_and_admitting_one_says_it_waits(
    open_browser, demo
):
    page = open_browser().page
    sign_in(page, "steward")
    before = open_conflicts(page)

    page.goto("/candidates/?predicate=core%2Fhas-version")
    billing = row(page, "billing").filter(has_text="5.1")
    note = billing.locator(".in-conflict")
    assert "admitting does not settle it" in note.inner_text()
    photograph(page, "candidates")
    conflict_url = note.get_by_role("link", name="rule the conflict").get_attribute("href")

    billing.locator("summary", has_text="Reject").click()
    billing.get_by_label("Ground to reject").fill("5.2 is tagged; 5.1 was never deployed")
    billing.get_by_role("button", name="Reject", exact=True).click()
    message = page.locator(".message").filter(has_text="Rejected: billing")
    message.wait_for()
    assert "closed" in message.inner_text()
    assert open_conflicts(page) == before - 1

    page.goto(conflict_url)
    page.get_by_text("Why it closed:").wait_for()
    assert "5.2 is tagged" in page.locator(".conflict-closed-why").inner_text()
    assert page.get_by_role("button", name="Keep this").count() == 0
    assert page.locator(".status-disputed").count() == 0
    photograph(page, "conflict-closed")

    page.goto("/candidates/?predicate=core%2Fprefers")
    graphql = row(page, "api-layer").filter(has_text="GraphQL")
    assert "admitting does not settle it" in graphql.locator(".in-conflict").inner_text()
    graphql.locator("a.row-link").click()
    page.get_by_role("heading", level=1).wait_for()
    assert "admitting does not settle it" in page.locator("p.in-conflict").first.inner_text()
    photograph(page, "candidate-page")
    page.go_back()
    graphql = row(page, "api-layer").filter(has_text="GraphQL")
    graphql.locator("summary", has_text="Admit").click()
    graphql.get_by_label("Ground to admit").fill("the team does prefer it for the BFF")
    graphql.get_by_role("button", name="Admit", exact=True).click()
    message = page.locator(".message").filter(has_text="Admitted: api-layer")
    message.wait_for()
    assert "still open" in message.inner_text()
    photograph(page, "candidates-after-admit")
    message.get_by_role("link").click()
    page.get_by_role("button", name="Keep this").first.wait_for()
    conflict = Conflict.objects.get(pk=page.url.rstrip("/").split("/")[-1])
    assert conflict.is_open
    photograph(page, "conflict-open")


def test_a_side_rejected_from_its_page_is_shown_rejected_in_a_conflict_still_open(
    open_browser, member, steward
):
    def say(actor, predicate, source, **extra):
        data = {"scope": "project", "subject": "api-layer", "predicate": predicate}
        data |= {"object": "GraphQL", "source_type": source, **extra}
        return assert_fact(actor=actor, data=data).fact

    say(steward, "core/decided-against", "decision-record", epistemic="commitment")
    avoids = say(member, "core/avoids", "agent-note")
    prefers = say(member, "core/prefers", "session-log")
    conflict = Conflict.objects.get(members__fact=prefers)

    page = open_browser().page
    sign_in(page, "stella")
    page.goto(f"/facts/{avoids.pk}/")
    page.locator("summary", has_text="Reject").click()
    page.get_by_label("Ground to reject").fill("the note misread ADR-12")
    page.get_by_role("button", name="Reject", exact=True).click()
    message = page.locator(".message").filter(has_text="Rejected: api-layer core/avoids")
    message.wait_for()
    assert "still open" in message.inner_text()

    page.goto(f"/conflicts/{conflict.pk}/")
    page.get_by_text("rejected: no longer a side").wait_for()
    assert page.get_by_role("button", name="Keep this").count() == 2
    assert page.get_by_text("Rejected, so not a side of this conflict any more").is_visible()
    photograph(page, "conflict-open-with-rejected")
    if SHOTS:  # the rejected side up close at phone width
        page.set_viewport_size({"width": 390, "height": 900})
        box = page.get_by_text("rejected: no longer a side").bounding_box()
        clip = {"x": 0, "y": max(0, box["y"] - 300), "width": 390, "height": 700}
        page.screenshot(
            path=Path(SHOTS) / "conflict-rejected-side-390.png", full_page=True, clip=clip
        )
