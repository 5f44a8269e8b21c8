"""The header's search box in a real browser: "/" focuses it, Enter lands on the results."""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from memories.write.actions import assert_fact
from tests.browser.conftest import needs_browser, sign_in

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

# Looked at by hand, not committed (the worktree's shots/ folder).
SHOTS = Path(__file__).resolve().parents[2] / "shots"


def write(actor, subject, predicate, obj, **extra):
    data = {"scope": "project", "subject": subject, "predicate": predicate, "object": obj}
    return assert_fact(actor=actor, data={**data, "source_type": "user-assertion", **extra})


def shoot(page, name: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=SHOTS / f"{name}-{width}.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def test_slash_focuses_the_search_box_and_enter_finds_a_fact_by_a_word_of_its_object(
    open_browser, member, steward
):
    fact = write(member, "shoply", "core/deployed-via", "Fly.io machines").fact
    write(member, "shoply", "core/uses", "Redis", statement="the session cache")
    page = open_browser().page
    sign_in(page, "mira")
    box = page.get_by_role("searchbox", name="Find facts")

    page.keyboard.press("/")
    expect(box).to_be_focused()
    page.keyboard.type("machines")
    page.keyboard.press("Enter")

    page.get_by_role("heading", name="Find facts", level=1).wait_for()
    assert page.url.endswith("/search/?q=machines")
    expect(page.get_by_text("1 fact matches.")).to_be_visible()
    result = page.get_by_role("link", name="Fly.io machines")
    assert result.get_attribute("href") == f"/facts/{fact.pk}/"
    # No sideways scrolling at phone width.
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 900})
    shoot(page, "search-results")

    page.goto("/")
    shoot(page, "search-header")


def test_slash_typed_in_a_field_is_a_character_not_a_jump(open_browser, member):
    page = open_browser().page
    sign_in(page, "mira")
    page.goto("/facts/")
    field = page.get_by_label("Subject", exact=True)
    field.fill("a")
    field.press("/")

    expect(field).to_have_value("a/")
    expect(page.get_by_role("searchbox", name="Find facts")).not_to_be_focused()


def test_the_stewards_header_with_its_search_box_stays_one_line_at_1280(open_browser, steward):
    page = open_browser().page
    sign_in(page, "stella")
    page.set_viewport_size({"width": 1280, "height": 900})
    header = page.locator(".site-header").bounding_box()
    brand = page.locator(".site-header .brand").bounding_box()
    assert header["height"] < brand["height"] * 3, "the header wraps to a second line"
    page.keyboard.press("/")
    box = page.get_by_role("searchbox", name="Find facts")
    expect(box).to_be_focused()
    # Focused, the box widens over the navigation instead of pushing it to a new line.
    expect(box).to_have_css("width", "352px")  # 22rem, once its transition is over
    assert page.locator(".site-header").bounding_box()["height"] == header["height"]
    page.keyboard.type("nothing here")
    shoot(page, "search-header-focused-steward")
