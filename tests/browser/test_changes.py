"""The "Automatic changes" page in a real browser: a steward reverts a write-path supersession."""

import pytest

from memories.store.models import Fact
from tests.browser.conftest import needs_browser, sign_in
from tests.browser.test_console import serious_violations
from tests.changes_world import write_path_supersession

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
    page.get_by_role("status").get_by_text(f"Change {entry.pk} was reverted.").wait_for()
    reverted = page.locator(f"#change-{entry.pk}")
    assert "Reverted by stella" in reverted.inner_text()
    assert "the old version is still deployed" in reverted.inner_text()
    assert Fact.objects.get(pk=older.pk).is_live
