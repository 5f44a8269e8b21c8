"""The operator's shell commands are a person's actions in the feeds, in words (issue 30 §4)."""

import re
from html import unescape
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import Q
from django.urls import reverse

from memories.management.commands._accounts import SHELL_ACCOUNT
from memories.store.models import AuditEntry
from tests.conftest import make_user
from tests.console.conftest import signed_in

pytestmark = pytest.mark.django_db

OPERATOR_ACTIONS = ["granted-scope", "made-steward", "revoked-steward"]


def _operate() -> None:
    make_user("mira")
    for arguments in [
        ("grant_scope", "mira", "project"),
        ("grant_scope", "mira", "fresh-scope"),
        ("make_steward", "mira", "--scope", "project"),
        ("make_steward", "mira", "--scope", "project", "--revoke"),
        ("make_steward", "mira"),
    ]:
        call_command(*arguments, stdout=StringIO())


def _text(page) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", page.content.decode())))


def _miras():
    return AuditEntry.objects.filter(
        Q(after__member="mira") | Q(after__steward="mira") | Q(before__steward="mira")
    )


def test_the_entries_name_the_shells_account_and_no_rule(scope, other_scope):
    _operate()
    # two grants, two on one scope, and the one on every scope in each of three scopes
    assert _miras().count() == 7
    assert {(e.actor.username, e.rule) for e in _miras()} == {(SHELL_ACCOUNT, "")}
    assert not _miras().automatic().exists()


def test_the_changes_page_does_not_list_them_as_automatic(steward):
    _operate()
    page = signed_in(steward).get(reverse("changes"))
    assert not {entry.pk for entry in page.context["page"]} & set(
        _miras().values_list("pk", flat=True)
    )
    assert "mira" not in _text(page)


def test_the_audit_feed_reads_who_did_what_to_whom_where(steward):
    _operate()
    page = signed_in(steward).get(reverse("audit"), {"who": "human"})
    text = _text(page)
    assert "Made mira a member of project" in text
    assert "Made mira a steward of project" in text
    assert "Revoked mira's stewardship of project" in text
    assert "Made mira a steward of every scope" in text
    assert "Made mira a member of fresh-scope, a scope created for it" in text
    assert "Granted a scope" not in text
    rows = [e for e in page.context["page"] if e.pk in set(_miras().values_list("pk", flat=True))]
    assert len(rows) == 6  # two scopes here: project and fresh-scope
    assert f'<td data-label="Who">{SHELL_ACCOUNT}</td>' in page.content.decode()
