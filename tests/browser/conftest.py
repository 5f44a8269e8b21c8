"""Playwright on Debian's Chromium against pytest-django's live server.

One browser for the whole session; each test gets fresh contexts. Every page
a test visits is watched for console errors, so a CSP violation (the browser
logs "Refused to ...") fails the test that caused it.
"""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deadlines import BROWSER_DEADLINE

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).parent / "screenshots"
PASSWORD = "a-long-test-password"

# Playwright's sync API runs an event loop in this thread; Django refuses ORM
# calls from a thread with a running loop unless told this is fine (tests only).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

_missing = not shutil.which(CHROMIUM)
if _missing and os.environ.get("CLAIMGRAPH_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"CLAIMGRAPH_REQUIRE_BROWSER=1 but {CHROMIUM} is not installed")

needs_browser = pytest.mark.skipif(_missing, reason=f"{CHROMIUM} is not installed")

# Every wait of Playwright's (a navigation, a locator's action or wait_for, an
# expect) is on a condition and ends as soon as it holds; on a busy machine a
# page can take many seconds, so none gives up before this (tests/deadlines.py).
DEADLINE_MS = BROWSER_DEADLINE * 1000


@pytest.fixture(scope="session")
def browser() -> Iterator:
    from django.db import connections
    from playwright.sync_api import expect, sync_playwright

    serialized = {
        alias: getattr(connections[alias], "_test_serialized_contents", None)
        for alias in connections
    }
    expect.set_options(timeout=DEADLINE_MS)
    with sync_playwright() as playwright:
        # Playwright's event loop leaves this thread in a new context, and
        # Django keeps one connection object per context: without the copy,
        # serialized_rollback finds no serialized data on the new object and
        # silently skips restoring the migrations' rows after each flush.
        for alias, contents in serialized.items():
            if contents is not None and not hasattr(
                connections[alias], "_test_serialized_contents"
            ):
                connections[alias]._test_serialized_contents = contents
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield chromium
        chromium.close()


class Watched:
    """A browser context whose pages record console errors and uncaught exceptions."""

    def __init__(self, browser, base_url: str, *, expect_statuses=(), **options) -> None:
        # A test that provokes an error answer on purpose (a 400 with the form's errors)
        # names its status: Chromium logs the load of any 4xx as a console error.
        self.expected = tuple(
            words
            for status in expect_statuses
            for words in (
                f"the server responded with a status of {status}",  # Chromium
                f"Response Status Error Code {status} from",  # htmx
            )
        )
        options = {"viewport": {"width": 1280, "height": 900}, **options}
        self.context = browser.new_context(base_url=base_url, **options)
        self.context.set_default_timeout(DEADLINE_MS)
        self.context.set_default_navigation_timeout(DEADLINE_MS)
        self.errors: list[str] = []
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _console(self, message) -> None:
        if message.type == "error" and not any(e in message.text for e in self.expected):
            self.errors.append(message.text)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def open_browser(browser, live_server) -> Iterator:
    """Open contexts as needed; on teardown, fail if any page logged an error (e.g. CSP)."""
    opened: list[Watched] = []

    def open_one(**options) -> Watched:
        watched = Watched(browser, live_server.url, **options)
        opened.append(watched)
        return watched

    yield open_one
    errors = [error for watched in opened for error in watched.errors]
    for watched in opened:
        watched.close()
    assert errors == [], f"the pages logged errors: {errors}"


def sign_in(page, username: str, password: str = PASSWORD) -> None:
    page.goto("/signin/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Dashboard").wait_for()
