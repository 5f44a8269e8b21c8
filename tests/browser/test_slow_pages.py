"""On a busy machine a page can take many seconds: the browser tests wait for it.

Every wait of Playwright's in these tests is bounded by the one browser
deadline (tests/deadlines.py), never by a short absolute timeout.
"""

import time

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import needs_browser
from tests.deadlines import BROWSER_DEADLINE

# Longer than an idle machine ever takes, and than the 10 s navigations and
# locators had (and expect's own 5 s), yet well within the deadline.
SLOW_ANSWER_SECONDS = 11
SLOW_SCRIPT_SECONDS = 6

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    # As every browser test: the live server makes any test transactional, and
    # without serialized_rollback its flush would leave the next test's restore
    # of the migrations' rows colliding with rows made afresh.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.skipif(
        BROWSER_DEADLINE < 2 * SLOW_ANSWER_SECONDS,
        reason="CLAIMGRAPH_TEST_BROWSER_DEADLINE is set too short for a slow page",
    ),
]

PAGE = f"""<!doctype html>
<html lang="en"><head><title>Slow</title></head>
<body><h1>Slow</h1>
<script>setTimeout(() => {{ document.body.dataset.ready = "yes"; }}, {SLOW_SCRIPT_SECONDS * 1000})
</script></body></html>"""


def test_a_slow_answer_and_a_slow_script_are_waited_for(open_browser):
    page = open_browser().page

    def answer_late(route) -> None:
        # A busy server. This stalls only the Python side; Playwright's driver
        # goes on counting the navigation's time meanwhile.
        time.sleep(SLOW_ANSWER_SECONDS)
        route.fulfill(status=200, content_type="text/html", body=PAGE)

    page.route("**/slow/", answer_late)
    started = time.monotonic()
    page.goto("/slow/")
    assert time.monotonic() - started >= SLOW_ANSWER_SECONDS
    page.get_by_role("heading", name="Slow").wait_for()
    expect(page.locator("body")).to_have_attribute("data-ready", "yes")
