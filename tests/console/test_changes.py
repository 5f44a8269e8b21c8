"""The "Automatic changes" page and the audit feed's filter, over HTTP (SPEC §12)."""

import pytest
from django.urls import reverse

from memories.store.models import AuditEntry
from tests.changes_world import state, write, write_path_supersession
from tests.console.conftest import signed_in

pytestmark = pytest.mark.django_db


def test_the_audit_feeds_automatic_filter_holds_write_path_supersessions(member, steward):
    entry, *_ = write_path_supersession(member)
    assert entry.actor == member  # credited to the writer, still automatic
    page = signed_in(steward).get(reverse("audit"), {"who": "automatic"})
    listed = [e.pk for e in page.context["page"]]
    assert entry.pk in listed
    human = signed_in(steward).get(reverse("audit"), {"who": "human"})
    assert entry.pk not in [e.pk for e in human.context["page"]]


def test_the_page_lists_the_change_with_its_rule_writer_and_links(member, steward):
    entry, older, newer, _ = write_path_supersession(member)
    page = signed_in(steward).get(reverse("changes")).content.decode()
    assert "write path: supersede" in page
    assert member.username in page
    assert reverse("fact", args=[older.pk]) in page
    assert reverse("fact", args=[newer.pk]) in page
    assert f'action="{reverse("change-revert", args=[entry.pk])}"' in page
    assert 'href="/changes/"' in page  # in the main navigation


def test_a_member_sees_the_change_but_no_revert_form_and_may_not_post(member):
    entry, older, _, _ = write_path_supersession(member)
    client = signed_in(member)
    page = client.get(reverse("changes")).content.decode()
    assert "write path: supersede" in page
    assert reverse("change-revert", args=[entry.pk]) not in page
    closed = state(older)
    response = client.post(reverse("change-revert", args=[entry.pk]), {"reason": "mine"})
    assert response.status_code == 403 and state(older) == closed


def test_an_outsider_sees_nothing_and_finds_nothing(member, outsider):
    entry, *_ = write_path_supersession(member)
    client = signed_in(outsider)
    assert "write path: supersede" not in client.get(reverse("changes")).content.decode()
    assert (
        client.post(reverse("change-revert", args=[entry.pk]), {"reason": "x"}).status_code == 404
    )


def test_a_steward_reverts_without_javascript_and_the_row_says_so(member, steward):
    entry, older, _, before = write_path_supersession(member)
    client = signed_in(steward)
    response = client.post(
        reverse("change-revert", args=[entry.pk]), {"reason": "too eager"}, follow=True
    )
    assert response.redirect_chain[-1][0] == reverse("changes")
    page = response.content.decode()
    assert f"Change {entry.pk} was reverted: AuthService core/has-version 1.0 is back" in page
    assert f"Reverted by {steward.username}" in page and "too eager" in page
    assert state(older) == before
    again = client.post(reverse("change-revert", args=[entry.pk]), {"reason": "again"})
    assert again.status_code == 409


def test_a_revert_without_a_reason_shows_the_error_and_writes_nothing(member, steward):
    entry, older, _, _ = write_path_supersession(member)
    closed, written = state(older), AuditEntry.objects.count()
    response = signed_in(steward).post(reverse("change-revert", args=[entry.pk]), {"reason": " "})
    assert response.status_code == 400
    assert "Reason: This field is required." in response.content.decode()
    assert state(older) == closed and AuditEntry.objects.count() == written


def test_the_list_filters_by_rule(member, steward):
    write_path_supersession(member)
    client = signed_in(steward)
    assert client.get(reverse("changes"), {"rule": "crawler"}).context["page"].object_list == []
    assert len(client.get(reverse("changes"), {"rule": "write"}).context["page"]) == 1


def _write_path_conflict(member, steward):
    """A code fact, then an outranked session-log rival: the write path opens a conflict."""
    write(steward, "AuthService", "core/has-version", "2.0.0", source="code")
    write(member, "AuthService", "core/has-version", "2.1.0", source="session-log")
    return AuditEntry.objects.get(action="opened-conflict")


def test_a_change_no_revert_exists_for_shows_why_and_links_its_conflict(member, steward):
    entry = _write_path_conflict(member, steward)
    assert entry.rule.startswith("write path:")
    page = signed_in(steward).get(reverse("changes")).content.decode()
    assert reverse("change-revert", args=[entry.pk]) not in page
    assert "rule on it from the conflict" in page
    assert reverse("conflict", args=[entry.target_id]) in page


def test_a_refused_revert_returns_to_the_list_with_the_message_and_the_typed_reason(
    member, steward
):
    entry, *_ = write_path_supersession(member)
    client = signed_in(steward)
    client.post(reverse("change-revert", args=[entry.pk]), {"reason": "first"})
    written = AuditEntry.objects.count()
    again = client.post(reverse("change-revert", args=[entry.pk]), {"reason": "typed twice"})
    assert again.status_code == 409
    page = again.content.decode()
    assert "Automatic changes" in page and "this change was already reverted" in page
    assert f'href="#change-{entry.pk}"' in page
    assert "typed twice" in page  # kept, though the row now shows the first revert
    assert AuditEntry.objects.count() == written


def test_a_revert_says_which_value_came_back_and_links_the_conflict_it_opened(member, steward):
    entry, *_ = write_path_supersession(member)
    response = signed_in(steward).post(
        reverse("change-revert", args=[entry.pk]), {"reason": "still deployed"}, follow=True
    )
    record = AuditEntry.objects.reverts_of([entry.pk]).get()
    opened = record.after["opened_conflict"]
    assert opened  # 1.0 and 1.1 compete on a one-valued slot
    page = response.content.decode()
    assert f"Change {entry.pk} was reverted: AuthService core/has-version 1.0 is back" in page
    assert "a conflict is open" in page
    assert reverse("conflict", args=[opened]) in page
