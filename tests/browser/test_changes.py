"""The "Automatic changes" page in a real browser: a steward reverts a write-path supersession."""

from pathlib import Path

import pytest

from memories.store.models import AuditEntry, Fact
from memories.write.reverts import revert_automatic_change
from tests.browser.conftest import needs_browser, sign_in
from tests.browser.test_console import serious_violations
from tests.changes_world import write, write_path_supersession

SHOTS = Path("/work/wt/i30-flows-shots")

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def test_a_steward_reverts_an_automatic_change_from_the_page(open_browser, member, steward):
    entry, older, _, _ = write_path_supersession(member)
    page = open_browser().page
    sign_in(page, "stella")
    page.get_by_role("navigation", name="Main").get_by_role(
        "link", name="Automatic changes"
    ).click()
    page.get_by_role("heading", name="Automatic changes", level=1).wait_for()
    assert serious_violations(page) == []
    row = page.locator(f"#change-{entry.pk}")
    assert "write path: supersede" in row.inner_text()
    row.get_by_label("Reason").fill("the old version is still deployed")
    row.get_by_role("button", name="Revert").click()
    page.get_by_role("status").get_by_text(
        f"Change {entry.pk} was reverted: AuthService core/has-version 1.0 is back"
    ).wait_for()
    reverted = page.locator(f"#change-{entry.pk}")
    assert "Reverted by stella" in reverted.inner_text()
    assert "the old version is still deployed" in reverted.inner_text()
    assert Fact.objects.get(pk=older.pk).is_live
    reverted.get_by_role("link", name="The conflict the revert opened").wait_for()
    _shots(page, "changes-reverted")


def _shots(page, name):
    SHOTS.mkdir(exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=SHOTS / f"{name}-{width}.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def test_a_change_with_no_revert_says_why_and_a_refusal_keeps_the_reason(
    open_browser, member, steward
):
    write(steward, "Billing", "core/has-version", "2.0.0", source="code")
    write(member, "Billing", "core/has-version", "2.1.0", source="session-log")
    opened = AuditEntry.objects.get(action="opened-conflict")
    entry, *_ = write_path_supersession(member)
    page = open_browser(expect_statuses=(409,)).page
    sign_in(page, "stella")
    page.goto("/changes/")
    row = page.locator(f"#change-{opened.pk}")
    assert row.get_by_role("button", name="Revert").count() == 0
    assert "No revert:" in row.inner_text()
    row.get_by_role("link", name="Open the conflict").wait_for()
    # Another steward reverts first; this one's revert is refused, back on the list.
    target = page.locator(f"#change-{entry.pk}")
    target.get_by_label("Reason").fill("typed, then refused")
    revert_automatic_change(actor=steward, entry_id=entry.pk, reason="first")
    target.get_by_role("button", name="Revert").click()
    page.get_by_role("alert").get_by_text("this change was already reverted").wait_for()
    assert "typed, then refused" in page.get_by_role("alert").inner_text()
    assert serious_violations(page) == []
    _shots(page, "changes-refused")
