"""The console's shared mechanics in a real browser: the action keys and their `?` list,
the filter URLs, errors that never wipe the page, status messages after htmx actions,
the styled error pages and no sideways scrolling at phone width."""

import re

import pytest

from admissions.actions import record_verdict
from admissions.selectors import fact_status
from memories.actions import assert_fact
from tests.browser.conftest import needs_browser, sign_in

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    # serialized_rollback: data migrations seed the vocabulary and the stewards group.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def write(actor, subject, predicate, obj, source="session-log", **extra):
    data = {"scope": "project", "subject": subject, "predicate": predicate, "object": obj}
    return assert_fact(actor=actor, data={**data, "source_type": source, **extra}).fact


@pytest.fixture
def facts(member, steward):
    candidates = [write(member, "shoply", "core/uses", name) for name in ("Redis", "Kafka")]
    admitted = write(steward, "AuthService", "core/has-version", "2.0.0", "code")
    record_verdict(actor=steward, fact_id=admitted.pk, verdict="admitted", ground="in code")
    return {"candidates": candidates, "admitted": admitted}


def active(page) -> str:
    return page.evaluate(
        "(() => { const e = document.activeElement;"
        " return e.tagName + (e.name ? ':' + e.name : '') + (e.id ? '#' + e.id : ''); })()"
    )


# --- 1. the keys -----------------------------------------------------------------------------


def test_question_mark_lists_the_keys_in_a_dialog_that_esc_and_its_button_close(
    open_browser, facts
):
    page = open_browser().page
    sign_in(page, "stella")
    dialog = page.get_by_role("dialog", name="Keyboard")
    assert not dialog.is_visible()
    page.keyboard.press("?")
    dialog.wait_for()
    text = dialog.inner_text()
    for words in ("Admit", "Reject", "Keep candidate", "Both stand", "Dismiss", "Challenge"):
        assert words in text
    for key in ("j", "k", "Enter", "x", "a", "r", "1", "9", "b", "d", "c", "/", "?"):
        assert dialog.locator("kbd", has_text=re.compile(f"^{re.escape(key)}$")).count() >= 1
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")
    page.keyboard.press("?")
    dialog.get_by_role("button", name="Close").click()
    dialog.wait_for(state="hidden")
    # While typing in a field, ? is just a character.
    page.goto("/facts/")
    page.get_by_label("Search").fill("what?")
    assert not dialog.is_visible()


def test_an_action_key_opens_its_reason_and_ctrl_enter_submits_it(open_browser, facts):
    page = open_browser().page
    sign_in(page, "stella")
    candidate = facts["candidates"][0]
    page.goto(f"/facts/{candidate.pk}/")
    page.keyboard.press("a")
    # The ground is empty: the key focuses it and waits, nothing is submitted yet.
    label = page.evaluate("document.activeElement.labels[0].textContent")
    assert label.strip().startswith("Ground")
    assert fact_status(candidate).status == "candidate"
    page.keyboard.type("seen in docker-compose.yml")
    page.keyboard.press("r")  # typing: a key is a letter here, not Reject
    page.keyboard.press("Control+Enter")
    page.locator("#fact-status .status-word").get_by_text("admitted").wait_for()
    assert fact_status(candidate).status == "admitted"


def test_keys_never_fire_while_typing_and_c_opens_the_challenge(open_browser, facts, member):
    page = open_browser().page
    sign_in(page, "mira")
    page.goto(f"/facts/{facts['admitted'].pk}/")
    page.keyboard.press("c")
    page.keyboard.type("a ctrl-less c and a do nothing here")
    assert page.evaluate("document.activeElement.tagName") in ("TEXTAREA", "INPUT")
    page.get_by_label("Evidence").fill("CHANGELOG.md | 3.0.0 released")
    page.keyboard.press("Control+Enter")
    page.locator("#fact-status .status-word").get_by_text("suspended").wait_for()


def test_a_key_in_the_current_row_wins_over_the_same_key_elsewhere(open_browser, facts):
    page = open_browser().page
    sign_in(page, "stella")
    page.goto("/candidates/")
    # Two rows and the page each get a link for "a" that records which was followed.
    page.evaluate(
        """() => {
        window.pressed = [];
        const make = (where, label) => {
          const b = document.createElement('a');
          b.href = '#'; b.dataset.key = 'a'; b.textContent = label;
          b.addEventListener('click', (e) => { e.preventDefault(); window.pressed.push(label); });
          where.appendChild(b);
        };
        make(document.querySelector('main'), 'page');
        document.querySelectorAll('[data-queue-item]').forEach(
          (row, i) => make(row.lastElementChild, 'row' + (i + 1)));
      }"""
    )
    page.keyboard.press("a")  # no current row: the page's own link
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("a")  # the second row is current: its own link
    assert page.evaluate("window.pressed") == ["page", "row2"]


def test_the_key_list_fits_a_phone(open_browser, facts):
    page = open_browser(viewport={"width": 390, "height": 844}).page
    sign_in(page, "stella")
    page.keyboard.press("?")
    page.get_by_role("dialog", name="Keyboard").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
