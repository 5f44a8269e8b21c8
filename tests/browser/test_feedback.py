"""The console's shared mechanics in a real browser: the action keys and their `?` list,
the filter URLs, errors that never wipe the page, status messages after htmx actions,
the styled error pages and no sideways scrolling at phone width."""

import contextlib
import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from admissions.actions import file_challenge, record_verdict, refute_challenge
from admissions.selectors import fact_status
from memories.write.actions import assert_fact
from tests.browser.conftest import PASSWORD, SCREENSHOTS, needs_browser, sign_in
from tests.browser.test_console import demo_pages

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
          where.prepend(b);
        };
        make(document.querySelector('main'), 'page');
        document.querySelectorAll('[data-queue-item]').forEach(
          // First in the row: a row's own Admit (the Candidates queue's) comes after it.
          (row, i) => make(row.firstElementChild, 'row' + (i + 1)));
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


# --- 2. filter URLs --------------------------------------------------------------------------

FILTERED_PAGES = ["/conflicts/", "/candidates/", "/facts/", "/challenges/", "/audit/", "/entities/"]

# The filter form's fields and the address's query, each as sorted [name, value] pairs.
FORM_QUERY = """() => {
  const form = document.querySelector('form.filters');
  return [...new FormData(form).entries()].map(([k, v]) => [k, String(v)]).sort();
}"""
URL_QUERY = "() => [...new URLSearchParams(location.search).entries()].sort()"


@pytest.fixture
def busy(member, steward, facts):
    write(
        steward,
        "api-layer",
        "core/decided-against",
        "GraphQL",
        "decision-record",
        epistemic="commitment",
        evidence=[{"ref": "ADR-12", "quote": "We will not adopt GraphQL."}],
    )
    write(member, "api-layer", "core/prefers", "GraphQL")
    return facts


def filter_changes(page) -> list:
    """Three to five changes of the filter form, as (locator, value or None for Enter)."""
    form = page.locator("form.filters")
    changes = []
    selects = [s for s in form.locator("select").all() if s.locator("option").count() > 1]
    for select in selects[:2]:
        values = select.locator("option").evaluate_all("options => options.map(o => o.value)")
        changes.append((select, values[-1]))
        changes.append((select, values[1]))
    texts = form.locator("input[type=search], input[type=text]").all()
    if texts:
        changes.append((texts[0], "a"))
        changes.append((texts[0], "ap"))
    if selects:
        values = selects[0].locator("option").evaluate_all("options => options.map(o => o.value)")
        changes.append((selects[0], values[0]))
    return changes


def same_query(page, why: str) -> None:
    """The address's query equals the filter form, once htmx has settled.

    Waits for them to agree (up to the browser deadline); if they never do, the
    assertion shows both rather than Playwright's timeout.
    """
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(
            f"() => JSON.stringify(({URL_QUERY})()) === JSON.stringify(({FORM_QUERY})())"
        )
    url, form = page.evaluate(URL_QUERY), page.evaluate(FORM_QUERY)
    assert url == form, f"{why}: address {url}, form {form}"


@pytest.mark.parametrize("path", FILTERED_PAGES)
def test_the_address_always_equals_the_filters_on_screen(open_browser, busy, path):
    page = open_browser().page
    sign_in(page, "stella")
    page.goto(path)
    target = page.locator("form.filters").get_attribute("hx-target")
    changes = filter_changes(page)
    assert len(changes) >= 3, f"{path}: too few filters to exercise"
    for field, value in changes:
        with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
            if field.evaluate("e => e.tagName") == "SELECT":
                field.select_option(value)
            else:
                field.fill(value)
                field.press("Enter")
        same_query(page, f"{path} after {value!r}")
    page.wait_for_load_state("networkidle")
    shown = page.locator(target).inner_text()
    on_screen = page.evaluate(FORM_QUERY)
    page.reload()
    assert page.evaluate(FORM_QUERY) == on_screen
    assert page.locator(target).inner_text() == shown


@pytest.mark.parametrize("path", FILTERED_PAGES)
def test_without_javascript_the_filters_are_the_address_too(open_browser, busy, path):
    page = open_browser(java_script_enabled=False).page
    sign_in(page, "stella")
    page.goto(path)
    for field, value in filter_changes(page)[:3]:
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
        page.get_by_role("button", name="Apply filters").click()
        page.wait_for_load_state()
        same_query(page, f"{path} after {value!r}")


# --- 3. errors never wipe the page -----------------------------------------------------------


def the_layout_is_still_there(page) -> None:
    assert page.get_by_role("navigation", name="Main").is_visible()
    assert page.evaluate("getComputedStyle(document.querySelector('.site-header')).display") == (
        "flex"
    )


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_a_whitespace_ground_on_challenge_is_an_error_beside_the_field(
    open_browser, facts, member, settings, javascript
):
    settings.DEBUG = True  # as under `make run`, where django-htmx's DEBUG helper is loaded
    page = open_browser(java_script_enabled=javascript, expect_statuses=[400]).page
    sign_in(page, "mira")
    page.goto(f"/facts/{facts['admitted'].pk}/")
    page.locator("summary", has_text="Challenge").click()
    page.get_by_label("Why is it wrong?").fill("   ")
    page.get_by_label("Evidence").fill("CHANGELOG.md")
    page.get_by_role("button", name="Challenge", exact=True).click()
    field = page.locator(".field.has-error").filter(has=page.get_by_label("Why is it wrong?"))
    field.locator(".error").wait_for()
    the_layout_is_still_there(page)
    page.get_by_role("heading", level=1).wait_for()
    if javascript:
        # The focus moves once htmx has settled the swap, a moment after the
        # error appears: wait for it rather than read it at once.
        field_id = page.get_by_label("Why is it wrong?").get_attribute("id")
        page.wait_for_function("id => document.activeElement.id === id", arg=field_id)
    assert fact_status(facts["admitted"]).status == "admitted"


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_a_batch_review_with_nothing_ticked_is_an_error_on_the_same_page(
    open_browser, facts, settings, javascript
):
    settings.DEBUG = True
    page = open_browser(java_script_enabled=javascript, expect_statuses=[400]).page
    sign_in(page, "stella")
    page.goto("/candidates/")
    page.get_by_label("Ground for all selected").fill("not enough")
    page.get_by_role("button", name="Reject selected").click()
    page.get_by_text("Select at least one candidate.").wait_for()
    the_layout_is_still_there(page)
    # The two candidates' boxes are still there (with JavaScript, beside select-all).
    assert page.locator("input[type=checkbox][name=facts]").count() == 2
    if javascript:
        page.wait_for_function("document.activeElement && document.activeElement !== document.body")
    assert {fact_status(fact).status for fact in facts["candidates"]} == {"candidate"}


# --- 4. every htmx action says what it did -----------------------------------------------------


def said(page, words: str) -> None:
    """The words are in the status region, announced (role=status), and focus is not lost."""
    region = page.locator("#messages")
    region.get_by_text(words).wait_for()
    assert region.get_attribute("role") == "status"
    assert region.get_attribute("aria-live") == "polite"
    page.wait_for_function("() => document.activeElement !== document.body")
    assert page.evaluate("document.activeElement.tagName") != "BODY"


def test_htmx_challenge_refute_admit_and_batch_review_say_what_they_did(
    open_browser, facts, member
):
    member_page = open_browser().page
    sign_in(member_page, "mira")
    member_page.goto(f"/facts/{facts['admitted'].pk}/")
    member_page.locator("summary", has_text="Challenge").click()
    member_page.get_by_label("Why is it wrong?").fill("3.0.0 shipped last week")
    member_page.get_by_label("Evidence").fill("CHANGELOG.md | 3.0.0 released")
    member_page.get_by_role("button", name="Challenge", exact=True).click()
    said(member_page, "Challenge filed")

    page = open_browser().page
    sign_in(page, "stella")
    page.goto(f"/facts/{facts['admitted'].pk}/")
    page.get_by_label("Why the fact stands").fill("2.0.0 is what runs")
    page.get_by_role("button", name="Refute").click()
    said(page, "Challenge refuted")

    page.goto(f"/facts/{facts['candidates'][0].pk}/")
    page.locator("summary", has_text="Admit").click()
    page.get_by_label("Ground to admit").fill("seen in docker-compose.yml")
    page.get_by_role("button", name="Admit", exact=True).click()
    said(page, "Admitted:")

    page.goto("/candidates/")
    page.locator("input[type=checkbox][name=facts]").first.check()
    page.get_by_label("Ground for all selected").fill("one session is not enough")
    page.get_by_role("button", name="Reject selected").click()
    said(page, "Rejected 1 of 1 selected candidates.")


def test_a_refusal_htmx_does_not_swap_is_said_in_the_status_region(
    open_browser, facts, member, steward
):
    challenge = file_challenge(
        actor=member, fact_id=facts["admitted"].pk, ground="wrong", evidence=[{"ref": "PR-1"}]
    )
    page = open_browser(expect_statuses=[409]).page
    sign_in(page, "stella")
    page.goto(f"/facts/{facts['admitted'].pk}/")
    page.get_by_label("Why the fact stands").fill("it stands")
    # Meanwhile another steward answers the same challenge.
    refute_challenge(actor=steward, challenge_id=challenge.pk, ground="checked elsewhere")
    page.get_by_role("button", name="Refute").click()
    said(page, "That was not done:")
    the_layout_is_still_there(page)
    assert page.get_by_label("Why the fact stands").input_value() == "it stands"


def test_the_status_message_fits_a_phone(open_browser, facts, member):
    page = open_browser(viewport={"width": 390, "height": 844}).page
    sign_in(page, "mira")
    page.goto(f"/facts/{facts['admitted'].pk}/")
    page.locator("summary", has_text="Challenge").click()
    page.get_by_label("Why is it wrong?").fill("3.0.0 shipped last week")
    page.get_by_label("Evidence").fill("https://example.com/" + "a-very-long-path/" * 12)
    page.get_by_role("button", name="Challenge", exact=True).click()
    said(page, "Challenge filed")
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")


# --- 5 and 6. every page at phone width; the error pages ------------------------------------


def all_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
    ]


def sideways(page) -> int:
    """How far the page scrolls sideways (0: not at all)."""
    return page.evaluate("document.documentElement.scrollWidth - innerWidth")


def test_no_page_scrolls_sideways_at_390_px_and_axe_finds_nothing(open_browser):
    call_command("seed_demo", stdout=StringIO())
    steward = User.objects.get(username="steward")
    steward.set_password(PASSWORD)
    steward.save()
    watched = open_browser(viewport={"width": 390, "height": 844}, expect_statuses=[404, 405])
    page = watched.page
    sign_in(page, "steward")
    extra = [("health", "/health/"), ("404", "/no-such-page/")]
    pages = [*demo_pages(), *extra, ("405", demo_pages()[2][1] + "resolve")]
    wide, problems = {}, {}
    for name, url in pages:
        page.goto(url)
        page.get_by_role("heading", level=1).wait_for()
        if sideways(page) > 0:
            wide[name] = sideways(page)
        found = all_violations(page)
        if found:
            problems[name] = found
        page.screenshot(path=SCREENSHOTS / f"feedback-{name}-390.png", full_page=True)
    assert wide == {}, f"pages that scroll sideways at 390 px (by px): {wide}"
    assert problems == {}
