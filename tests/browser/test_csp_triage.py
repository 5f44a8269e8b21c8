"""A whole candidate triage leaves a clean console: no CSP violation (issue 30 item 5), and a
challenge's effect said before and after filing in the browser (issue 30 item 7).

The report was about fifty "Refused to apply inline style" errors (style-src 'self', the
empty string's hash) during triage. Every browser test already fails on a console error;
this one also listens for the ``securitypolicyviolation`` event itself, in every page it
opens, and walks the triage end to end: verdicts from the Candidates queue by mouse and
by keyboard, a refused blank ground, a batch, a verdict from a fact page opened from the
queue, the keys dialog, and challenges filed through htmx (one refused as already open).
"""

import pytest

from admissions.actions import file_challenge, record_verdict
from admissions.models import Record
from admissions.selectors import fact_status
from memories.write.actions import assert_fact
from tests.browser.conftest import needs_browser, sign_in

pytestmark = [
    pytest.mark.browser,
    needs_browser,
    # serialized_rollback: data migrations seed the vocabulary and the stewards group.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

# Installed before any script of the page runs, in every page and after every navigation.
LISTEN = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.cspViolation(`${event.violatedDirective} ${event.blockedURI} ${event.sample}`);
});
"""


def write(actor, subject, predicate, obj, source="session-log"):
    data = {"scope": "project", "subject": subject, "predicate": predicate, "object": obj}
    return assert_fact(actor=actor, data={**data, "source_type": source}).fact


def watch_csp(watched) -> list[str]:
    """Every CSP violation and every console line about the policy, in ``watched``'s pages."""
    seen: list[str] = []
    watched.context.expose_function("cspViolation", lambda text: seen.append(text))
    watched.context.add_init_script(LISTEN)
    watched.page.on(
        "console",
        lambda message: (
            seen.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return seen


def row(page, name: str):
    return page.locator("tr[data-queue-item]").filter(has_text=name)


@pytest.fixture
def triage(member, steward):
    """Six candidates for the queue; eight admitted facts (a cap of 2), two challenged by
    the member, so the member is at the cap."""
    candidates = [
        write(member, "shoply", "core/uses", name)
        for name in ("Redis", "Kafka", "Celery", "Sentry", "Nginx", "Flask")
    ]
    admitted = []
    for number in range(8):
        fact = write(steward, f"lib-{number}", "core/has-version", "1.0", "code")
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="in code")
        admitted.append(fact)
    for fact in admitted[:2]:
        file_challenge(actor=member, fact_id=fact.pk, ground="outdated", evidence=["PR-1"])
    return {"candidates": candidates, "admitted": admitted}


def test_a_full_candidate_triage_raises_no_csp_violation(open_browser, triage):
    watched = open_browser(expect_statuses=(400,))
    violations = watch_csp(watched)
    page = watched.page
    sign_in(page, "stella")
    page.goto("/candidates/?predicate=core%2Fuses")

    # Two verdicts from the keyboard alone: j to the first row, then the next comes by itself.
    page.keyboard.press("j")
    for key, name, following in (("r", "Redis", "Kafka"), ("a", "Kafka", "Celery")):
        page.wait_for_function(
            "name => document.activeElement.closest('tr')?.textContent.includes(name)", arg=name
        )
        page.keyboard.press(key)
        page.keyboard.type(f"checked {name}")
        page.keyboard.press("Control+Enter")
        row(page, name).wait_for(state="detached")
        page.wait_for_function(
            "name => document.activeElement.closest('tr')?.textContent.includes(name)",
            arg=following,
        )

    # A verdict by mouse, in place.
    celery = row(page, "Celery")
    celery.locator("summary", has_text="Admit").click()
    celery.get_by_label("Ground to admit").fill("seen in docker-compose.yml")
    celery.get_by_role("button", name="Admit", exact=True).click()
    celery.wait_for(state="detached")

    # A blank ground, refused beside its row (a 400 swapped in), then given.
    sentry = row(page, "Sentry")
    sentry.locator("summary", has_text="Reject").click()
    sentry.get_by_label("Ground to reject").fill("   ")
    sentry.get_by_role("button", name="Reject", exact=True).click()
    sentry = row(page, "Sentry")
    sentry.get_by_text("Say why: a ground is required.").wait_for()
    sentry.get_by_label("Ground to reject").fill("no trace of it")
    sentry.get_by_role("button", name="Reject", exact=True).click()
    sentry.wait_for(state="detached")

    # The keys dialog, opened and closed.
    page.get_by_role("heading", name="Candidates", exact=True).click()
    page.keyboard.press("?")
    page.get_by_role("heading", name="Keyboard").wait_for()
    page.get_by_role("button", name="Close").click()

    # A batch of one.
    row(page, "Nginx").get_by_role("checkbox").check()
    page.locator("#id_batch_ground").fill("not verified")
    page.get_by_role("button", name="Reject selected").click()
    page.get_by_text("1 applied, 0 refused").wait_for()

    # A verdict from the fact page opened from the queue.
    row(page, "Flask").get_by_role("link").first.click()
    page.get_by_role("heading", level=1).wait_for()
    page.locator("summary", has_text="Admit").click()
    page.get_by_label("Ground to admit").fill("seen in the code")
    page.get_by_role("button", name="Admit", exact=True).click()
    page.get_by_text("Queue empty").wait_for()

    # A challenge filed through htmx from the keyboard: the status panel is swapped.
    page.goto(f"/facts/{triage['admitted'][5].pk}/")
    page.keyboard.press("c")
    page.keyboard.type("the changelog says 1.1")
    page.locator("#id_challenge_evidence").fill("CHANGELOG.md")
    page.get_by_role("button", name="Challenge", exact=True).click()
    page.get_by_text("Suspends the fact until a steward refutes it.").first.wait_for()

    assert [fact_status(fact).status for fact in triage["candidates"]] == [
        "rejected",
        "admitted",
        "admitted",
        "rejected",
        "rejected",
        "admitted",
    ]
    assert violations == []


def test_at_the_cap_the_form_says_queued_before_filing_and_the_flash_after(open_browser, triage):
    watched = open_browser()
    violations = watch_csp(watched)
    page = watched.page
    sign_in(page, "mira")
    page.goto(f"/facts/{triage['admitted'][2].pk}/")
    page.locator("summary", has_text="Challenge").click()
    notice = page.locator("#challenge-effect")
    assert "a challenge filed now is queued with no effect" in notice.inner_text()
    page.get_by_label("Why is it wrong?").fill("1.0 was yanked")
    page.locator("#id_challenge_evidence").fill("https://pypi.example.org/lib-2")
    page.get_by_role("button", name="Challenge", exact=True).click()
    page.locator("#messages").get_by_text("Queued with no effect").wait_for()
    # The panel came back (its actions collapsed) naming the open challenge in place of the form.
    page.wait_for_function(
        "() => document.getElementById('challenge-effect')?.textContent"
        ".includes('You already have an open challenge on this fact')"
    )
    assert violations == []


def test_a_second_challenge_from_a_stale_page_is_refused_and_keeps_what_was_typed(
    open_browser, triage, member
):
    watched = open_browser(expect_statuses=(409,))
    violations = watch_csp(watched)
    page = watched.page
    sign_in(page, "mira")
    target = triage["admitted"][6]
    page.goto(f"/facts/{target.pk}/")
    page.locator("summary", has_text="Challenge").click()
    page.get_by_label("Why is it wrong?").fill("typed with care")
    # Meanwhile the same account challenges the fact elsewhere (another tab, an agent).
    file_challenge(actor=member, fact_id=target.pk, ground="from the agent", evidence=["x"])
    page.get_by_role("button", name="Challenge", exact=True).click()
    page.locator("#messages").get_by_text("you already have an open challenge").wait_for()
    assert page.get_by_label("Why is it wrong?").input_value() == "typed with care"
    assert Record.objects.challenges().filter(fact=target).count() == 1
    assert violations == []


def test_the_watch_sees_a_violation_when_there_is_one(open_browser):
    # The same watch, shown to work: an inline style attribute is what the report saw refused.
    watched = open_browser()
    violations = watch_csp(watched)
    page = watched.page
    page.goto("/signin/")
    page.evaluate("document.body.setAttribute('style', '')")
    page.wait_for_function("() => true")
    deadline = 50
    while not violations and deadline:
        page.wait_for_timeout(100)
        deadline -= 1
    assert any("style-src" in seen for seen in violations), violations
    # Provoked on purpose: not an error of the page.
    watched.errors[:] = [e for e in watched.errors if "Content Security Policy" not in e]
