"""The dashboard's queue charts (issue 32, the picture) at desktop and phone width: every
chart inside the screen, nothing scrolls sideways, and no Content Security Policy is
violated (the charts' looks are all in the stylesheet, and they run no script)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from admissions.snapshots import take_queue_snapshot
from demo.management.commands.seed_demo import record_demo_history
from memories.write.actions import assert_fact
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
CHART_BOXES = """() => [...document.querySelectorAll('svg.queue-chart-svg')]
  .map(e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.width]; })"""


@pytest.fixture
def month(scope, steward, member) -> None:
    """A few candidates and a conflict waiting, 30 days of history before today and today's."""
    now = timezone.now()
    for days_ago, name in [(9, "Redis"), (6, "Kafka"), (2, "Celery"), (1, "RabbitMQ")]:
        data = {"scope": "project", "subject": "shoply", "predicate": "core/uses"}
        assert_fact(
            actor=member,
            data={**data, "object": name, "source_type": "session-log"},
            now=now - timedelta(days=days_ago),
        )
    decided = {"scope": "project", "subject": "api-layer", "object": "GraphQL"}
    assert_fact(
        actor=steward,
        data={
            **decided,
            "predicate": "core/decided-against",
            "source_type": "decision-record",
            "epistemic": "commitment",
        },
        now=now - timedelta(days=20),
    )
    assert_fact(
        actor=member,
        data={**decided, "predicate": "core/prefers", "source_type": "session-log"},
        now=now - timedelta(days=4),
    )
    record_demo_history(scope, now=now)
    take_queue_snapshot(now=now)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_dashboard_draws_each_queue_inside_the_screen_with_a_clean_console(
    open_browser, month, width
):
    watched = open_browser(viewport={"width": width, "height": 900})
    page = watched.page
    # Signing in lands on the dashboard; a violation while it loads is a console
    # error, which fails the test (tests/browser/conftest.py), and one after is watched.
    sign_in(page, "stella")
    page.evaluate(WATCH)

    charts = page.get_by_role("img", name="over the last 30 days")
    assert charts.count() == 4
    caption = page.locator(".queue-chart-caption").nth(1).inner_text()
    assert caption.startswith("6 waiting today")
    assert page.evaluate(NO_SIDEWAYS)
    for left, right, drawn in page.evaluate(CHART_BOXES):
        assert 0 <= left < right <= width
        assert drawn >= 240  # wide enough for its 10-unit text to stay legible
    charts.nth(1).locator("rect.day-bar").first.hover()
    assert page.evaluate("window.__violations") == []

    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"queue-charts-{width}.png", full_page=True)
    page.locator(".counts > div").nth(1).screenshot(
        path=SCREENSHOTS / f"queue-charts-{width}-card.png"
    )
