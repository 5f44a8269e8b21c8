"""The account page's webhook and digest sections and an endpoint's delivery log, in Chromium.

A real delivery: a conflict is written, the feed records its events, the task
worker delivers them over HTTP to the console's own demo receiver, and the
endpoint's page shows the log. At desktop and phone width nothing scrolls
sideways and no Content Security Policy is violated; screenshots are kept.
"""

import pytest
from django.utils import timezone

from memories.store.models import Scope
from memories.write.actions import assert_fact
from notifications.feed import record_events
from notifications.webhook.actions import create_endpoint
from notifications.webhook.models import Attempt
from tests.browser.conftest import SCREENSHOTS, needs_browser, sign_in
from tests.taskqueue import run_queued_tasks

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

NO_SIDEWAYS = "document.documentElement.scrollWidth <= window.innerWidth"
# What sticks out furthest, for the failure's message.
WIDEST = """() => [...document.querySelectorAll('body *')]
  .map(e => [e.getBoundingClientRect().right, e.tagName + '.' + e.className])
  .sort((a, b) => b[0] - a[0]).slice(0, 3)"""


@pytest.fixture
def delivered(live_server, settings, scope, steward, member):
    settings.CLAIMGRAPH_WEBHOOK_RECEIVER = True
    settings.CLAIMGRAPH_WEBHOOK_ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    settings.CLAIMGRAPH_SITE_URL = live_server.url
    steward.email = "stella@example.org"
    steward.save()
    endpoint, _ = create_endpoint(
        owner=steward,
        scope=Scope.objects.get(name="project"),
        url=f"{live_server.url}/webhooks/receiver/",
        kinds=["conflict.opened", "candidate.waiting"],
    )
    data = {"scope": "project", "subject": "AuthService", "predicate": "core/has-version"}
    assert_fact(actor=steward, data={**data, "object": "2.0.0", "source_type": "code"})
    assert_fact(actor=member, data={**data, "object": "9.9.9", "source_type": "agent-note"})
    record_events(now=timezone.now())
    run_queued_tasks()
    assert Attempt.objects.filter(status_code=204).exists()
    return endpoint


@pytest.mark.parametrize("width", [1280, 390])
def test_the_account_page_and_an_endpoint_s_log_read_well(open_browser, delivered, width):
    watched = open_browser(viewport={"width": width, "height": 900})
    page = watched.page
    sign_in(page, "stella")

    page.goto("/account/")
    assert page.get_by_role("heading", name="Webhooks").count() == 1
    assert page.get_by_text(delivered.url).count() >= 1
    assert page.get_by_role("heading", name="Email digest").count() == 1
    page.screenshot(path=str(SCREENSHOTS / f"account-notifications-{width}.png"), full_page=True)
    assert page.evaluate(NO_SIDEWAYS), page.evaluate(WIDEST)

    page.goto(f"/account/webhooks/{delivered.pk}/")
    log = page.locator("table").first
    assert "204" in log.inner_text()
    page.screenshot(path=str(SCREENSHOTS / f"webhook-endpoint-{width}.png"), full_page=True)
    assert page.evaluate(NO_SIDEWAYS), page.evaluate(WIDEST)
