"""The console around a verdict on a side of an open conflict (issue 30 item 3).

Before the steward acts, the Candidates queue and the candidate's page say
that admitting does not settle the conflict; after, the flash says what the
verdict did to it, with a link; the conflict page never offers to keep a
rejected fact, and a conflict a rejection closed says why.
"""

import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from admissions.actions import record_verdict
from memories.store.models import Conflict
from tests.conftest import at
from tests.console.conftest import write

pytestmark = pytest.mark.django_db

NOTE = "admitting does not settle it"


def said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def row_of(page: str, fact) -> str:
    row = page[page.index(f'id="row-{fact.pk}"') :]
    return row[: row.index("</tr>")]


def test_the_queue_says_before_the_steward_acts_that_admitting_does_not_settle_the_conflict(
    as_steward, world
):
    page = as_steward.get(reverse("candidates")).content.decode()
    row = row_of(page, world.newcomer)
    assert NOTE in row and "rule the conflict" in row
    assert f'<a href="/conflicts/{world.conflict.pk}/">rule the conflict</a>' in row
    assert NOTE not in row_of(page, world.candidates[0])


def test_the_candidates_page_says_it_too_beside_admit(as_steward, world):
    page = as_steward.get(reverse("fact", args=[world.newcomer.pk])).content.decode()
    verdicts = page[page.index('id="verdict-heading"') :]
    assert verdicts.index(NOTE) < verdicts.index(">Admit</summary>")
    assert f'href="/conflicts/{world.conflict.pk}/"' in verdicts
    other = as_steward.get(reverse("fact", args=[world.candidates[0].pk])).content.decode()
    assert NOTE not in other


def test_rejecting_from_the_queue_closes_the_conflict_and_the_flash_links_it(as_steward, world):
    post = {
        "facts": str(world.newcomer.pk),
        "verdict": "rejected",
        "ground": "the ADR stands",
        "row": "1",
    }
    response = as_steward.post(reverse("candidates"), post)
    assert response.status_code == 303
    world.conflict.refresh_from_db()
    assert world.conflict.resolution == "moot"
    (message,) = said(response)
    assert message.startswith("Rejected: api-layer core/prefers GraphQL.")
    assert f'<a href="/conflicts/{world.conflict.pk}/">' in message and "closed" in message


def test_admitting_from_the_queue_leaves_the_conflict_open_and_the_flash_says_it_waits(
    as_steward, world
):
    post = {"facts": str(world.newcomer.pk), "verdict": "admitted", "ground": "ok", "row": "1"}
    response = as_steward.post(reverse("candidates"), post)
    world.conflict.refresh_from_db()
    assert world.conflict.is_open
    (message,) = said(response)
    assert f'<a href="/conflicts/{world.conflict.pk}/">' in message
    assert "still open" in message and "rule the conflict" in message
    # The flash is HTML the page renders, not escaped text.
    page = as_steward.get(response["Location"]).content.decode()
    assert f'<a href="/conflicts/{world.conflict.pk}/">Its conflict on' in page


def test_a_verdict_on_the_fact_page_says_the_same(as_steward, world):
    url = reverse("fact-verdict", args=[world.newcomer.pk])
    response = as_steward.post(url, {"verdict": "admitted", "ground": "we do prefer it"})
    (message,) = said(response)
    assert "still open" in message and f"/conflicts/{world.conflict.pk}/" in message


def test_a_batch_admit_lists_the_conflict_that_still_waits(as_steward, world):
    post = {
        "facts": [str(world.newcomer.pk), str(world.candidates[0].pk)],
        "verdict": "admitted",
        "ground": "checked",
    }
    page = as_steward.post(reverse("candidates"), post).content.decode()
    applied = page[page.index('<ul class="applied">') :]
    applied = applied[: applied.index("</ul>")]
    assert f'<a href="/conflicts/{world.conflict.pk}/">Its conflict on' in applied


def test_the_dashboard_stops_counting_a_conflict_a_rejection_closed(as_steward, world, steward):
    def open_count() -> int:
        page = as_steward.get(reverse("dashboard")).content.decode()
        return int(re.search(r'aria-label="(\d+) open conflicts"', page).group(1))

    assert open_count() == 1
    record_verdict(actor=steward, fact_id=world.newcomer.pk, verdict="rejected", ground="no")
    assert open_count() == 0


def test_a_conflict_closed_by_a_rejection_says_why_and_offers_no_ruling(as_steward, world, steward):
    record_verdict(
        actor=steward, fact_id=world.newcomer.pk, verdict="rejected", ground="the ADR stands"
    )
    page = as_steward.get(reverse("conflict", args=[world.conflict.pk])).content.decode()
    assert "Why it closed:" in page and "stella\u2019s verdict" in page
    assert "the ADR stands" in page and "was rejected" in page
    assert ">Keep this</button>" not in page and "status-disputed" not in page


def test_a_rejected_side_of_a_conflict_still_open_is_shown_rejected_without_keep_this(
    as_steward, member, steward
):
    adr = write(
        steward,
        "api-layer",
        "core/decided-against",
        "GraphQL",
        "decision-record",
        epistemic="commitment",
        now=at("2026-05-01T09:00"),
    ).fact
    avoids = write(member, "api-layer", "core/avoids", "GraphQL", "agent-note").fact
    prefers = write(member, "api-layer", "core/prefers", "GraphQL", "session-log").fact
    conflict = Conflict.objects.get(members__fact=prefers)
    record_verdict(actor=steward, fact_id=avoids.pk, verdict="rejected", ground="misread ADR")
    conflict.refresh_from_db()
    assert conflict.is_open

    page = as_steward.get(reverse("conflict", args=[conflict.pk])).content.decode()
    assert page.count(">Keep this</button>") == 2
    assert page.count("rejected: no longer a side") == 1
    assert "Rejected, so not a side of this conflict any more" in page
    assert adr.pk and "Both stand" in page

    fact_page = as_steward.get(reverse("fact", args=[avoids.pk])).content.decode()
    assert "rejected: no longer a side" in fact_page
    assert NOTE not in fact_page


def test_the_audit_feed_lists_the_closing_as_the_stewards_act_in_words(as_steward, world, steward):
    record_verdict(actor=steward, fact_id=world.newcomer.pk, verdict="rejected", ground="no")
    page = as_steward.get(reverse("audit"), {"action": "closed-conflict"}).content.decode()
    assert "was rejected, so it no longer has two sides" in page
    assert "automatic" not in page[page.index("was rejected") - 2000 : page.index("was rejected")]
    changes = as_steward.get(reverse("changes")).content.decode()
    assert "was rejected" not in changes


def test_admitting_a_rejected_side_says_its_conflict_is_open_again(as_steward, world, steward):
    record_verdict(actor=steward, fact_id=world.newcomer.pk, verdict="rejected", ground="no")
    url = reverse("fact-verdict", args=[world.newcomer.pk])
    response = as_steward.post(url, {"verdict": "admitted", "ground": "we misread the ADR"})
    (message,) = said(response)
    assert "is open again" in message and f"/conflicts/{world.conflict.pk}/" in message
    world.conflict.refresh_from_db()
    assert world.conflict.is_open
