"""Right-to-left names and values on the console stay isolated (issue 29 item 4), in Chromium.

A Hebrew value beside "vs" and a Latin value must not pull the text around it
into its direction: each is a ``<bdi>``, which the browser lays out as an
isolate, so the conflict's line still reads left to right around it.
"""

from pathlib import Path

import pytest

from memories.write.actions import assert_fact
from tests.browser.conftest import needs_browser, sign_in

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

SHOTS = Path("/work/wt/i29-confusables-shots")


def write(actor, subject, obj, source, **extra):
    data = {"scope": "project", "subject": subject, "predicate": "core/has-version"}
    return assert_fact(actor=actor, data={**data, "object": obj, "source_type": source, **extra})


def test_a_conflict_of_a_hebrew_and_a_latin_value_reads_left_to_right(
    open_browser, member, steward
):
    write(steward, "PaySvc", "2.1.0", "code", confidence=0.95)
    clash = write(member, "P\u0430ySvc", "גרסה 3.0", "agent-note")  # a look-alike subject
    assert clash.status == "flagged"
    page = open_browser().page
    sign_in(page, "stella")
    page.goto(f"/conflicts/{clash.conflict.pk}/")
    value = page.locator("bdi", has_text="גרסה 3.0").first
    value.wait_for()
    assert value.evaluate("e => getComputedStyle(e).unicodeBidi") == "isolate"
    # Isolated, the Hebrew value starts right of the Latin one on the line
    # "PaySvc has-version: 2.1.0 vs גרסה 3.0" instead of being reordered with it.
    sides = page.locator("h1 .side")
    latin, hebrew = sides.nth(0).bounding_box(), sides.nth(1).bounding_box()
    assert latin["x"] < hebrew["x"]
    SHOTS.mkdir(exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=SHOTS / f"conflict-rtl-{width}.png", full_page=False)
    page.goto("/audit/?action=resolved-name")
    entry = page.locator("tr", has_text="whose name it looks like").first
    entry.wait_for()
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        entry.screenshot(path=SHOTS / f"audit-look-alike-{width}.png")
