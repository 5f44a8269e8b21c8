"""The fact and subject pages draw their slots (issue 30 item 12), at desktop and phone
width: nothing scrolls the page sideways, every picture stays inside the screen, and
no Content Security Policy is violated (the SVG's looks are all in the stylesheet)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.store.models import Fact
from memories.write.actions import assert_fact, invalidate_fact
from tests.browser.conftest import SCREENSHOTS, needs_browser, sign_in

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

NO_SIDEWAYS = "document.documentElement.scrollWidth <= window.innerWidth"
WATCH = """() => { window.__violations = [];
  document.addEventListener('securitypolicyviolation',
    e => window.__violations.push(e.violatedDirective + ' ' + e.sample)); }"""
# Every SVG of the page, as [left, right] in CSS pixels.
SVG_BOXES = """() => [...document.querySelectorAll('svg.timeline, svg.decay-chart')]
  .map(e => { const r = e.getBoundingClientRect(); return [r.left, r.right]; })"""


def write(actor, subject, predicate, obj, source, days_ago: float, **extra) -> Fact:
    data = {"scope": "project", "subject": subject, "predicate": predicate, "object": obj}
    now = timezone.now() - timedelta(days=days_ago)
    return assert_fact(actor=actor, data={**data, "source_type": source, **extra}, now=now).fact


@pytest.fixture
def ledger(steward, member) -> Fact:
    """payments-ledger with several slots: versions superseded and ended, a long value,
    a right-to-left one, a commitment against a preference; returns a middle version."""
    subject = "payments-ledger"
    write(steward, subject, "core/has-version", "1.4.0", "code", 200)
    middle = write(steward, subject, "core/has-version", "2.0.0", "code", 120)
    write(steward, subject, "core/has-version", "2.1.0", "code", 40)
    ended = write(member, subject, "core/uses", "Redis", "session-log", 150)
    invalidate_fact(actor=steward, fact_id=ended.pk, reason="moved to the managed cache")
    write(member, subject, "core/uses", "PostgreSQL 16 with logical replication", "session-log", 60)
    write(member, subject, "core/owned-by", "צוות תשלומים", "session-log", 90)
    write(
        steward,
        subject,
        "core/decided-against",
        "GraphQL",
        "decision-record",
        30,
        epistemic="commitment",
    )
    write(member, subject, "core/prefers", "GraphQL", "session-log", 3)
    return middle


def photograph(page, name: str) -> None:
    """The whole page, and each picture on it close up."""
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"slots-{name}.png", full_page=True)
    pictures = page.locator("figure.decay-figure, .timeline-wrap, .legend")
    for i in range(min(pictures.count(), 4)):
        pictures.nth(i).screenshot(path=SCREENSHOTS / f"slots-{name}-part{i}.png")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_fact_and_subject_pages_draw_their_slots_inside_the_screen_with_a_clean_console(
    open_browser, ledger, width
):
    watched = open_browser(viewport={"width": width, "height": 900})
    page = watched.page
    sign_in(page, "stella")

    page.goto(f"/facts/{ledger.pk}/")
    page.evaluate(WATCH)
    assert page.locator("svg.timeline g.bar").count() == 3
    assert page.locator("svg.timeline g.bar.current").count() == 1
    assert page.locator(".slot-history tr.current").count() == 1
    assert page.locator("svg.decay-chart").is_visible()
    caption = page.locator("figcaption.decay-caption").inner_text()
    assert "effective now" in caption and "halves every 90 days" in caption
    assert page.evaluate(NO_SIDEWAYS)
    for left, right in page.evaluate(SVG_BOXES):
        assert 0 <= left < right <= width
    assert page.evaluate("window.__violations") == []
    photograph(page, f"fact-{width}")

    page.goto(f"/subjects/{ledger.subject_id}/")
    page.evaluate(WATCH)
    cards = page.locator(".small-multiples svg.timeline.compact")
    assert cards.count() == 4  # has-version, owned-by, the prefers/decided-against group, uses
    assert page.evaluate(NO_SIDEWAYS)
    for left, right in page.evaluate(SVG_BOXES):
        assert 0 <= left < right <= width
    assert page.evaluate("window.__violations") == []
    photograph(page, f"subject-{width}")

    page.get_by_role("link", name="core/decided-against / core/prefers").click()
    page.get_by_role("heading", name="Timeline of the slot").wait_for()
    assert page.evaluate(NO_SIDEWAYS)
    page.locator(".conflicts-list a, section[aria-labelledby=conflicts-heading] a").first.click()
    page.get_by_role("heading", name="Candidates compared").wait_for()
    assert page.locator("svg.timeline").count() == 1
    assert page.evaluate(NO_SIDEWAYS)
    photograph(page, f"conflict-{width}")
