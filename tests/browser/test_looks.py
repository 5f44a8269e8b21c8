"""How the console looks (issue 30): no CSP violation while triaging candidates; evidence
URLs are links; times in one format with the zone."""

import pytest

from tests.browser.conftest import needs_browser, sign_in
from tests.browser.test_triage import queue, row  # noqa: F401  (the fixture)

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

WATCH = """() => { window.__violations = [];
  document.addEventListener('securitypolicyviolation',
    e => window.__violations.push(e.violatedDirective + ' ' + e.sample)); }"""


def test_triaging_candidates_violates_no_content_security_policy(open_browser, queue):  # noqa: F811
    page = open_browser().page
    sign_in(page, "stella")
    page.goto("/candidates/?predicate=core%2Fuses")
    page.evaluate(WATCH)
    for name in ("Kafka", "Celery"):
        item = row(page, name)
        item.locator("summary", has_text="Admit").click()
        item.get_by_label("Ground to admit").fill("seen in docker-compose.yml")
        item.get_by_role("button", name="Admit", exact=True).click()
        item.wait_for(state="detached")
    page.wait_for_timeout(300)  # htmx settles 20 ms after the swap
    assert page.evaluate("window.__violations") == []
