"""The conflicts queue and the conflict page in a real browser (issue 13 problems 3, 4, 9;
issue 11 item 8): kinds explained, the comparison table, the timeline, the truth slot,
the adjudicator's advice on request, and a ruling that lands on the queue's next item."""

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import pytest

from memories.core.verdicts import Verdict
from memories.maintenance.adjudicator import AdjudicationRequest, Answer
from memories.maintenance.judge import ask_adjudicator
from memories.maintenance.truth import mark_slots_stale, recompute_slot
from memories.store.models import Conflict, Fact
from memories.write.actions import assert_fact
from tests.browser.conftest import SCREENSHOTS, needs_browser, sign_in

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    # serialized_rollback: data migrations seed the vocabulary and the stewards group.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

PHONE = {"width": 390, "height": 844}
NO_SIDEWAYS = "document.documentElement.scrollWidth <= window.innerWidth"


def write(actor, subject, predicate, obj, source, **extra):
    data = {"scope": "project", "subject": subject, "predicate": predicate, "object": obj}
    return assert_fact(actor=actor, data={**data, "source_type": source, **extra})


def stance(steward, member, subject: str, obj: str) -> Conflict:
    """An exclusion-group conflict: a decision against ``obj``, then a preference for it."""
    write(
        steward,
        subject,
        "core/decided-against",
        obj,
        "decision-record",
        epistemic="commitment",
        evidence=[{"ref": f"ADR-{len(subject)}", "quote": f"We will not adopt {obj}."}],
    )
    return write(member, subject, "core/prefers", obj, "session-log").conflict


def version(steward, member, subject: str, old: str = "2.0.0", new: str = "3.0.0") -> Conflict:
    """An outranked conflict: code says ``old``, an agent's note says ``new``."""
    write(steward, subject, "core/has-version", old, "code")
    return write(member, subject, "core/has-version", new, "agent-note").conflict


def photograph(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=SCREENSHOTS / f"conflictpage-{name}-{width}.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


# --- problem 3: kinds explained, items distinguishable ------------------------------------


def test_exclusion_group_conflicts_on_two_subjects_read_differently_and_kinds_are_explained(
    open_browser, steward, member
):
    stance(steward, member, "api-layer", "GraphQL")
    stance(steward, member, "web-layer", "server-side rendering")
    version(steward, member, "AuthService")
    page = open_browser().page
    sign_in(page, "stella")
    page.goto("/conflicts/")
    rows = page.locator("tr[data-queue-item]")
    assert rows.count() == 3
    links = [rows.nth(i).locator("a.row-link").inner_text() for i in range(3)]
    assert len(set(links)) == 3
    api = next(text for text in links if text.startswith("api-layer"))
    # Both predicates of the exclusion group, each with its object.
    assert re.fullmatch(
        r"api-layer: core/decided-against GraphQL\s+vs\s+core/prefers GraphQL", api, re.I
    )
    assert "core/has-version: 2.0.0 vs 3.0.0" in next(t for t in links if "AuthService" in t)
    commitment = rows.filter(has_text="api-layer").get_by_text(re.compile("never overruled"))
    assert commitment.is_visible()
    outranked = rows.filter(has_text="AuthService")
    assert outranked.get_by_text(re.compile("less trusted source")).is_visible()
    photograph(page, "queue")

    page.locator("a.row-link", has_text="web-layer").click()
    title = page.get_by_role("heading", level=1).inner_text()
    assert re.fullmatch(
        r"web-layer: core/decided-against server-side rendering\s+vs\s+"
        r"core/prefers server-side rendering",
        title,
        re.I,
    )
    assert "never overruled" in page.locator("p.conflict-why").inner_text()
    assert "exclude each other" in page.locator("p.conflict-why").inner_text()
    # The meta line reads as one phrase (issue 30 item 14: "in demo , opened").
    assert re.search(r"\bin project, opened \S", page.locator("p.conflict-meta").inner_text())


# --- problem 4: one comparison table ---------------------------------------------------------


FIELDS = [
    "Object",
    "Predicate",
    "Source (trust)",
    "Epistemic class",
    "Confidence",
    "Effective confidence now",
    "Valid from",
    "Valid to",
    "Recorded",
    "Last reinforced",
    "Author",
    "Episode",
    "Statement",
    "Evidence",
    "Admission status",
    "In this conflict",
]


def test_candidates_compare_in_one_table_with_differences_marked_and_keep_buttons_level(
    open_browser, steward, member
):
    conflict = stance(steward, member, "api-layer", "GraphQL")
    page = open_browser().page
    sign_in(page, "stella")
    page.goto(f"/conflicts/{conflict.pk}/")
    table = page.locator("table.compare")
    assert table.count() == 1
    headers = table.locator("thead th.cand")
    assert headers.count() == 2
    row_names = [
        re.sub(r"\s*differs$", "", name.strip())
        for name in table.locator("tbody th[scope=row]").all_inner_texts()
    ]
    assert row_names == [*FIELDS, "Ruling"]
    for name in FIELDS:
        row = table.locator("tbody tr").filter(has=page.locator(f'th:text-is("{name}")'))
        if row.count() == 0:  # the header also holds "differs"
            row = table.locator("tbody tr").filter(has=page.get_by_text(name, exact=True))
        cells = row.first.locator("td")
        assert cells.count() == 2, name
        assert all(text.strip() for text in cells.all_inner_texts()), name
    # What differs is marked, visibly and in words; what agrees is not.
    differs = table.locator("tr.differs th[scope=row]").all_inner_texts()
    assert any(text.startswith("Predicate") for text in differs)
    assert any(text.startswith("Source") for text in differs)
    assert not any(text.startswith("Object") for text in differs)
    assert "differs" in table.locator("tr.differs th[scope=row]").first.inner_text()
    # Equal weight: the same width, the Keep this buttons on one line.
    widths = [headers.nth(i).bounding_box()["width"] for i in range(2)]
    assert abs(widths[0] - widths[1]) < 1
    keeps = page.get_by_role("button", name="Keep this")
    assert keeps.count() == 2
    tops = [keeps.nth(i).bounding_box()["y"] for i in range(2)]
    assert abs(tops[0] - tops[1]) < 1
    both = page.get_by_role("button", name="Both stand").bounding_box()
    assert both["y"] > max(tops)
    assert page.locator("[aria-pressed=true], .recommended, .chosen, [checked]").count() == 0
    photograph(page, "conflict")

    # At phone width the table stacks, candidate after candidate, and nothing scrolls sideways.
    page.set_viewport_size(PHONE)
    assert page.evaluate(NO_SIDEWAYS)
    first, second = (headers.nth(i).bounding_box() for i in range(2))
    keep_first = keeps.nth(0).bounding_box()
    assert first["y"] < keep_first["y"] < second["y"]
    assert page.get_by_text("differs").first.is_visible()


# --- problem 9: the timeline -----------------------------------------------------------------


def test_timeline_labels_show_the_values_members_alike_with_tooltips_unclipped_at_390(
    open_browser, steward, member
):
    conflict = stance(steward, member, "payments-gateway-service", "GraphQL federation gateway")
    page = open_browser().page
    sign_in(page, "stella")
    page.goto(f"/conflicts/{conflict.pk}/")
    labels = page.locator("svg.timeline text.lane-label").all_text_contents()
    assert any("core/decided-against GraphQL federation gateway" in text for text in labels)
    assert any("core/prefers GraphQL federation gateway" in text for text in labels)
    members = page.locator("svg.timeline g.bar.in-conflict")
    assert members.count() == 2
    styles = [
        members.nth(i)
        .locator("rect.bar-body")
        .evaluate("e => [getComputedStyle(e).stroke, getComputedStyle(e).strokeDasharray]")
        for i in range(2)
    ]
    assert styles[0] == styles[1]
    tips = page.locator("svg.timeline g.bar > title").all_text_contents()
    assert any("session-log" in tip and "valid from" in tip for tip in tips)
    assert any("decision-record" in tip for tip in tips)

    page.set_viewport_size(PHONE)
    assert page.evaluate(NO_SIDEWAYS)
    box = page.locator("svg.timeline").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    wrap = page.locator(".timeline-wrap")
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth")


# --- next item after a ruling ----------------------------------------------------------------


@pytest.mark.parametrize("java_script", [True, False], ids=["htmx", "no-js"])
def test_a_ruling_lands_on_the_next_conflict_of_the_filtered_queue_then_queue_empty(
    open_browser, steward, member, java_script
):
    first = version(steward, member, "svc-a")
    stance(steward, member, "api-layer", "GraphQL")  # another kind: outside the filtered queue
    second = version(steward, member, "svc-b")
    page = open_browser(java_script_enabled=java_script).page
    sign_in(page, "stella")
    page.goto("/conflicts/?kind=outranked")
    page.locator("a.row-link").first.click()
    assert page.url.split("?")[0].endswith(f"/conflicts/{first.pk}/")

    page.get_by_label("Reason for keeping candidate 1").fill("the code is the truth")
    page.get_by_role("button", name="Keep this").first.click()
    page.get_by_text("resolved: kept one candidate").wait_for()
    assert page.url.split("?")[0].endswith(f"/conflicts/{second.pk}/")
    assert parse_qs(urlsplit(page.url).query)["queue"] == ["kind=outranked"]

    page.get_by_label("Reason to dismiss").fill("a test note, not a claim")
    page.get_by_role("button", name="Dismiss").click()
    page.get_by_text("Queue empty").wait_for()
    assert urlsplit(page.url).path == "/conflicts/"
    assert parse_qs(urlsplit(page.url).query)["kind"] == ["outranked"]
    assert Conflict.objects.open().count() == 1  # the commitment, outside the filter


@pytest.mark.parametrize("java_script", [True, False], ids=["htmx", "no-js"])
def test_a_ruling_without_a_reason_shows_the_error_beside_its_field_and_keeps_the_page(
    open_browser, steward, member, java_script
):
    conflict = version(steward, member, "svc-a")
    watched = open_browser(java_script_enabled=java_script)
    page = watched.page
    sign_in(page, "stella")
    page.goto(f"/conflicts/{conflict.pk}/")
    page.get_by_label("Reason why both stand").fill("   ")
    page.get_by_role("button", name="Both stand").click()
    error = page.locator(".rulings .error").get_by_text("Say why: a ruling needs a reason.")
    error.wait_for()
    assert page.get_by_role("navigation", name="Main").is_visible()
    assert page.locator("svg.timeline").is_visible()
    assert Conflict.objects.open().count() == 1
    # The browser logs the expected 400 as a failed load; nothing else may be logged.
    watched.errors[:] = [error for error in watched.errors if "status of 400" not in error]


# --- the keyboard only ---------------------------------------------------------------------


def test_ten_conflicts_are_cleared_from_the_keyboard_in_few_keystrokes_each(
    open_browser, steward, member
):
    conflicts = [version(steward, member, f"svc-{i:02}", "1.0", "2.0") for i in range(10)]
    page = open_browser().page
    sign_in(page, "stella")
    page.goto("/conflicts/")
    keystrokes = 0

    def press(key: str) -> None:
        nonlocal keystrokes
        keystrokes += len(key.split("+"))  # Control+Enter is two keys
        page.keyboard.press(key)

    press("j")
    press("Enter")
    for number, conflict in enumerate(conflicts):
        page.wait_for_url(re.compile(f"/conflicts/{conflict.pk}/"))
        page.get_by_role("heading", level=1).wait_for()
        press("1")  # Keep candidate 1: focuses its reason
        assert page.evaluate("document.activeElement.tagName") == "TEXTAREA"
        page.keyboard.type(f"the code says so ({number})")  # the reason's own characters
        press("Control+Enter")
    page.get_by_text("Queue empty").wait_for()
    assert not Conflict.objects.open().exists()
    per_item = keystrokes / len(conflicts)
    print(
        f"\nkeyboard: {keystrokes} keystrokes for {len(conflicts)} conflicts ({per_item:.1f} each)"
    )
    assert per_item <= 12
    kept = Fact.objects.filter(subject__name__startswith="svc-", t_invalid__isnull=True)
    assert sorted(fact.object_display for fact in kept) == ["1.0"] * 10


# --- truth slot and the adjudicator's advice ---------------------------------------------------


@dataclass
class NamesAWinner:
    """A stand-in for the LLM endpoint: a single_winner verdict naming the first claim."""

    model: str = "test-model"
    consults_model: bool = True
    asked: list[AdjudicationRequest] = field(default_factory=list)

    def adjudicate(self, request: AdjudicationRequest) -> Answer:
        self.asked.append(request)
        verdict = Verdict(
            kind="single_winner",
            confidence=0.83,
            rationale="the code is more trusted than an agent's note",
            claim_set_hash=request.claim_set_hash,
            winner=request.claims[0].fact_id,
            model=self.model,
        )
        return Answer(verdict, raw_response="{}")


def test_truth_slot_panels_show_values_rationale_and_stale_on_subject_and_conflict_pages(
    open_browser, steward, member
):
    conflict = version(steward, member, "AuthService")
    recompute_slot(conflict.scope_id, conflict.subject_id, conflict.predicate_id)
    mark_slots_stale(conflict.predicate_id, "the predicate's cardinality changed")
    page = open_browser().page
    sign_in(page, "stella")
    for name, url in [
        ("subject", f"/subjects/{conflict.subject_id}/"),
        ("conflict-slot", f"/conflicts/{conflict.pk}/"),
    ]:
        page.goto(url)
        photograph(page, name)
        panel = page.locator("article.slot-panel")
        assert panel.count() == 1
        text = panel.inner_text()
        assert "2.0.0" in text and "3.0.0" in text
        assert "Decided by detection" in text and "one value, held by 1 claim" in text
        assert panel.locator(".badge", has_text="stale").is_visible()
        assert "the predicate's cardinality changed" in text
        computed = panel.locator("time")
        assert re.search(r"ago$", computed.inner_text())
        assert re.match(
            r"\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC$", computed.get_attribute("title")
        )
        page.set_viewport_size(PHONE)
        assert page.evaluate(NO_SIDEWAYS)
        page.set_viewport_size({"width": 1280, "height": 900})


def without_tokens(html: str) -> str:
    """The markup without its CSRF tokens (a fresh page load has fresh ones)."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)


@pytest.mark.parametrize("java_script", [True, False], ids=["htmx", "no-js"])
def test_the_adjudicators_advice_appears_only_when_asked_and_marks_no_candidate(
    open_browser, steward, member, java_script
):
    conflict = version(steward, member, "AuthService")
    # The model answered earlier (the judge, say): the button finds its memoized verdict.
    ask_adjudicator(actor=steward, conflict_id=conflict.pk, adjudicator=NamesAWinner())
    page = open_browser(java_script_enabled=java_script).page
    sign_in(page, "stella")
    page.goto(f"/conflicts/{conflict.pk}/")
    columns_before = without_tokens(page.locator("table.compare").inner_html())
    assert page.get_by_text("single winner").count() == 0
    assert "more trusted than an agent" not in page.content()

    page.get_by_role("button", name="Ask the adjudicator").click()
    advice = page.locator("#advice-panel")
    advice.get_by_text("the code is more trusted than an agent's note").wait_for()
    assert "single winner" in advice.inner_text() and "0.83" in advice.inner_text()
    assert "selects no candidate" in advice.inner_text()
    # Nothing in the comparison changed: no column chosen, highlighted or pre-filled.
    assert without_tokens(page.locator("table.compare").inner_html()) == columns_before
    classes = page.locator("table.compare thead th.cand").evaluate_all(
        "cells => cells.map(c => c.className.replace(/cand-\\d/, ''))"
    )
    assert len(set(classes)) == 1
    reasons = page.locator("table.compare textarea").evaluate_all("a => a.map(t => t.value)")
    assert reasons == ["", ""]
    assert Conflict.objects.get(pk=conflict.pk).resolved_at is None


def test_member_sees_no_ask_the_adjudicator_button_and_a_forged_ask_is_refused(
    open_browser, steward, member
):
    conflict = version(steward, member, "AuthService")
    watched = open_browser()
    page = watched.page
    sign_in(page, "mira")
    page.goto(f"/conflicts/{conflict.pk}/")
    assert page.get_by_role("button", name="Ask the adjudicator").count() == 0
    token = next(c["value"] for c in watched.context.cookies() if c["name"] == "csrftoken")
    forged = page.request.post(
        f"/conflicts/{conflict.pk}/advice",
        form={},
        headers={"X-CSRFToken": token, "Referer": page.url},
    )
    assert forged.status == 403
