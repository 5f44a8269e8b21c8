"""How the console looks (issue 30): no CSP violation while triaging candidates; evidence
URLs are links; times in one format with the zone."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import needs_browser, sign_in
from tests.browser.test_triage import LONG_URL, queue, row  # noqa: F401  (the fixture)

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


SHOTS = Path("/work/wt/i30-looks-shots")


def shoot(page, name: str) -> None:
    if SHOTS.is_dir():
        for width, height in ((1280, 900), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            page.screenshot(path=SHOTS / f"{name}-{width}.png", full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})


def test_an_evidence_url_is_a_link_that_passes_nothing_on(open_browser, queue):  # noqa: F811
    page = open_browser().page
    sign_in(page, "stella")
    page.goto("/candidates/?predicate=core%2Fuses")
    link = row(page, "Redis").get_by_role("link", name=LONG_URL)
    assert link.get_attribute("href") == LONG_URL
    assert link.get_attribute("rel") == "noopener noreferrer nofollow"
    assert row(page, "Redis").locator("time").first.get_attribute("title").endswith(" UTC")
    shoot(page, "candidates")
    page.goto(f"/facts/{queue['uses'][0].pk}/")
    assert page.get_by_role("link", name=LONG_URL).get_attribute("rel") == (
        "noopener noreferrer nofollow"
    )
    shoot(page, "fact")
    page.goto(f"/conflicts/{queue['conflict'].pk}/")
    assert page.locator(".conflict-meta time").get_attribute("title").endswith(" UTC")
    shoot(page, "conflict")


def test_the_keyboard_hint_shows_only_where_the_keys_act(open_browser, queue):  # noqa: F811
    page = open_browser().page
    sign_in(page, "stella")
    page.goto("/candidates/")
    expect(page.locator("#keys-hint")).to_be_visible()
    page.goto("/account/")
    page.get_by_role("heading", name="Account").wait_for()
    expect(page.locator("#keys-hint")).to_be_hidden()
    shoot(page, "account")
    page.goto("/health/")
    expect(page.locator("#keys-hint")).to_be_hidden()
    shoot(page, "health")


def test_the_stewards_nav_fits_one_line_at_1280_and_the_account_page_mentions_mcp(
    open_browser,
    queue,  # noqa: F811
):
    page = open_browser().page
    sign_in(page, "stella")
    page.goto("/account/")
    header = page.locator(".site-header").bounding_box()
    brand = page.locator(".site-header .brand").bounding_box()
    assert header["height"] < brand["height"] * 3, "the header wraps to a second line"
    assert "/mcp/" in page.locator("main").inner_text()
    page.get_by_label("Token name").fill("laptop agent")
    page.get_by_role("button", name="Issue a token").click()
    revoke = page.get_by_role("button", name="Revoke laptop agent")
    expect(revoke).to_have_class("secondary")
    assert page.locator("table.tokens td", has_text="active").count() == 1
    shoot(page, "account-token")
