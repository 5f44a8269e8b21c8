"""The console in a real browser: the steward's and the member's main flows, with and
without JavaScript, and every page checked by axe-core and photographed at two widths."""

import re
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from admissions.actions import record_verdict
from admissions.models import Record
from admissions.selectors import fact_status
from memories.store.models import Conflict, Fact
from memories.write.actions import assert_fact
from tests.browser.conftest import PASSWORD, SCREENSHOTS, needs_browser, sign_in

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    # serialized_rollback: data migrations seed the vocabulary and the stewards group.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]


def write(actor, subject, predicate, obj, source, **extra):
    data = {"scope": "project", "subject": subject, "predicate": predicate, "object": obj}
    return assert_fact(actor=actor, data={**data, "source_type": source, **extra})


@pytest.fixture
def world(member, steward):
    decided = write(
        steward,
        "api-layer",
        "core/decided-against",
        "GraphQL",
        "decision-record",
        epistemic="commitment",
        evidence=[{"ref": "ADR-12", "quote": "We will not adopt GraphQL."}],
    )
    newcomer = write(member, "api-layer", "core/prefers", "GraphQL", "session-log")
    for name in ("Redis", "Kafka", "Celery"):
        write(member, "shoply", "core/uses", name, "session-log")
    admitted = write(steward, "AuthService", "core/has-version", "2.0.0", "code").fact
    record_verdict(actor=steward, fact_id=admitted.pk, verdict="admitted", ground="in code")
    return {"decided": decided.fact, "newcomer": newcomer.fact, "admitted": admitted}


def open_count(page) -> int:
    page.goto("/")
    return int(page.get_by_role("link", name=re.compile(r"open conflicts$")).inner_text())


# --- the flows --------------------------------------------------------------------------


def test_sign_in_and_sign_out(open_browser, member):
    page = open_browser().page
    page.goto("/")
    assert "/signin/" in page.url
    sign_in(page, "mira")
    nav = page.get_by_role("navigation", name="Main")
    for name in ("Dashboard", "Conflicts", "Challenges", "Facts"):
        assert nav.get_by_role("link", name=name, exact=True).is_visible()
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("heading", name="Sign in").wait_for()
    page.goto("/facts/")
    assert "/signin/" in page.url


def test_steward_keeps_the_commitment_and_the_open_count_drops(open_browser, world):
    page = open_browser().page
    sign_in(page, "stella")
    before = open_count(page)
    page.get_by_role("link", name="Conflicts", exact=True).click()
    page.get_by_role("link", name=re.compile("^api-layer")).click()
    # The comparison table's columns are in recorded order: the decision came first.
    page.get_by_label("Reason for keeping candidate 1").fill("the ADR stands")
    page.get_by_role("button", name="Keep this").first.click()
    page.get_by_text("resolved: kept one candidate").wait_for()
    assert open_count(page) == before - 1
    world["newcomer"].refresh_from_db()
    assert world["newcomer"].invalidation_reason == "the ADR stands"


def test_steward_admits_a_candidate_then_batch_rejects_two(open_browser, world):
    page = open_browser().page
    sign_in(page, "stella")
    page.get_by_role("link", name="Candidates", exact=True).click()
    page.get_by_role("link", name=re.compile("^shoply")).first.click()
    page.locator("summary", has_text="Admit").click()
    page.get_by_label("Ground to admit").fill("seen in docker-compose.yml")
    page.get_by_role("button", name="Admit", exact=True).click()
    # Opened from the queue: the verdict leads on to the queue's next candidate.
    page.get_by_text("Admitted: shoply core/uses Redis. Next candidate.").wait_for()

    page.get_by_role("link", name="Candidates", exact=True).click()
    page.get_by_role("checkbox", name=re.compile("Kafka")).check()
    page.get_by_role("checkbox", name=re.compile("Celery")).check()
    page.get_by_label("Ground for all selected").fill("one agent session is not enough")
    page.get_by_role("button", name="Reject selected").click()
    result = page.get_by_role("status").filter(has_text="Batch review")
    result.get_by_text("2 applied, 0 refused").wait_for()
    rejected = {
        fact.object_display
        for fact in Fact.objects.filter(subject__name="shoply")
        if fact_status(fact).status == "rejected"
    }
    assert rejected == {"Kafka", "Celery"}


def test_member_challenge_suspends_and_a_steward_refutation_restores(open_browser, world):
    member_page = open_browser().page
    sign_in(member_page, "mira")
    member_page.get_by_role("link", name="Facts", exact=True).click()
    member_page.get_by_label("Search").fill("AuthService")
    member_page.get_by_role("button", name="Apply filters").click()
    member_page.get_by_role("link", name="2.0.0", exact=True).click()
    member_page.locator("summary", has_text="Challenge").click()
    member_page.get_by_label("Why is it wrong?").fill("3.0.0 shipped last week")
    member_page.get_by_label("Evidence").fill("CHANGELOG.md | 3.0.0 released")
    member_page.get_by_role("button", name="Challenge", exact=True).click()
    panel = member_page.locator("#fact-status")
    panel.locator(".status-word").get_by_text("suspended").wait_for()
    assert "suspended by the open evidenced challenge" in panel.inner_text().lower()

    steward_page = open_browser().page
    sign_in(steward_page, "stella")
    steward_page.goto(member_page.url)
    steward_page.get_by_label("Why the fact stands").fill("2.0.0 is what runs in production")
    steward_page.get_by_role("button", name="Refute").click()
    steward_page.locator("#fact-status .status-word").get_by_text("admitted").wait_for()
    assert fact_status(world["admitted"]).status == "admitted"


def test_member_sees_no_steward_controls_and_a_forged_post_is_refused(open_browser, world):
    watched = open_browser()
    page = watched.page
    sign_in(page, "mira")
    nav = page.get_by_role("navigation", name="Main")
    assert nav.get_by_role("link", name="Candidates").count() == 0
    page.get_by_role("link", name="Conflicts", exact=True).click()
    page.get_by_role("link", name=re.compile("^api-layer")).click()
    for name in ("Keep this", "Both stand", "Dismiss"):
        assert page.get_by_role("button", name=name).count() == 0
    page.goto(f"/facts/{world['admitted'].pk}/")
    assert page.get_by_role("button", name="Admit").count() == 0

    token = next(c["value"] for c in watched.context.cookies() if c["name"] == "csrftoken")
    conflict = Conflict.objects.open().get()
    forged = page.request.post(
        f"/conflicts/{conflict.pk}/resolve",
        form={"action": "keep", "keep": str(world["newcomer"].pk), "reason": "mine"},
        headers={"X-CSRFToken": token, "Referer": page.url},
    )
    assert forged.status == 403
    forged = page.request.post(
        f"/facts/{world['newcomer'].pk}/verdict",
        form={"verdict": "admitted", "ground": "mine"},
        headers={"X-CSRFToken": token, "Referer": page.url},
    )
    assert forged.status == 403
    assert Conflict.objects.open().count() == 1
    assert not Record.objects.filter(fact=world["newcomer"]).exists()


def test_the_main_flows_work_without_javascript(open_browser, world, member):
    page = open_browser(java_script_enabled=False).page
    sign_in(page, "stella")
    page.goto("/conflicts/")
    page.get_by_role("link", name=re.compile("^api-layer")).click()
    page.get_by_label("Reason why both stand").fill("a preference and a decision can coexist")
    page.get_by_role("button", name="Both stand").click()
    page.get_by_text("resolved: both stand").wait_for()
    assert not Conflict.objects.open().exists()

    page.get_by_role("link", name="Candidates", exact=True).click()
    page.get_by_role("checkbox", name=re.compile("Redis")).check()
    page.get_by_role("checkbox", name=re.compile("Kafka")).check()
    page.get_by_label("Ground for all selected").fill("unverified")
    page.get_by_role("button", name="Reject selected").click()
    page.get_by_text("2 applied, 0 refused").wait_for()

    page.get_by_role("link", name="Facts", exact=True).click()
    page.get_by_label("Search").fill("AuthService")
    page.get_by_role("button", name="Apply filters").click()
    page.get_by_role("link", name="2.0.0", exact=True).click()
    page.locator("summary", has_text="Challenge").click()
    page.get_by_label("Why is it wrong?").fill("superseded upstream")
    page.locator("#id_challenge_evidence").fill("PR-88")
    page.get_by_role("button", name="Challenge", exact=True).click()
    page.get_by_text("Challenge filed").wait_for()
    page.locator("#fact-status .status-word").get_by_text("suspended").wait_for()
    page.get_by_label("Why the fact stands").fill("checked again")
    page.get_by_role("button", name="Refute").click()
    page.locator("#fact-status .status-word").get_by_text("admitted").wait_for()


# --- every page: accessibility, CSP and screenshots ------------------------------------------


def demo_pages() -> list[tuple[str, str]]:
    """Each page of the console once, on the demo data."""
    conflict = Conflict.objects.open().filter(kind="commitment").get()
    suspended = Record.objects.challenges().filter(author__username="member").first().fact
    return [
        ("dashboard", "/"),
        ("conflicts", "/conflicts/"),
        ("conflict", f"/conflicts/{conflict.pk}/"),
        ("candidates", "/candidates/"),
        ("fact", f"/facts/{suspended.pk}/"),
        ("challenges", "/challenges/"),
        ("facts", "/facts/"),
        ("subject", f"/subjects/{suspended.subject_id}/"),
        ("entities", "/entities/"),
        ("search", "/search/?q=AuthService"),
        ("audit", "/audit/"),
        ("account", "/account/"),
    ]


def serious_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def photograph(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=SCREENSHOTS / f"{name}-{width}.png", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def test_every_page_passes_axe_logs_no_csp_error_and_is_photographed(open_browser):
    call_command("seed_demo", stdout=StringIO())
    for user in User.objects.filter(username__in=["steward", "member"]):
        user.set_password(PASSWORD)
        user.save()

    page = open_browser().page
    page.goto("/signin/")
    problems = {"signin": serious_violations(page)}
    photograph(page, "signin")
    sign_in(page, "steward")
    for name, url in demo_pages():
        page.goto(url)
        page.get_by_role("heading", level=1).wait_for()
        problems[name] = serious_violations(page)
        photograph(page, name)

    member = open_browser().page
    sign_in(member, "member")
    for name, url in [("member-conflict", demo_pages()[2][1]), ("member-fact", demo_pages()[4][1])]:
        member.goto(url)
        problems[name] = serious_violations(member)
        photograph(member, name)
    assert {name: found for name, found in problems.items() if found} == {}


def test_a_queue_is_worked_from_the_keyboard(open_browser, world):
    page = open_browser().page
    sign_in(page, "stella")
    page.goto("/candidates/")
    page.keyboard.press("j")
    first = page.evaluate("document.activeElement.textContent")
    page.keyboard.press("j")
    second = page.evaluate("document.activeElement.textContent")
    page.keyboard.press("k")
    assert page.evaluate("document.activeElement.textContent") == first != second
    page.keyboard.press("x")
    assert page.locator("tr.is-current input[type=checkbox]").is_checked()
    page.keyboard.press("Enter")
    page.get_by_role("heading", name=re.compile(first.split()[0])).wait_for()
    assert "/facts/" in page.url
