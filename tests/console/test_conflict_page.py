"""The conflict queue and page over HTTP: kinds in words, the next item after a ruling,
the truth slot panels and the adjudicator's advice on request."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse

from console.conflict_words import KIND_EXPLANATIONS, kind_explanation
from console.views.conflicts import COMPARED, ROWS
from memories.maintenance.truth import mark_slots_stale, recompute_slot
from memories.store.models import Adjudication, Conflict, ConflictKind
from tests.conftest import at

from .conftest import write

pytestmark = pytest.mark.django_db


def version_conflict(steward, member, subject: str) -> Conflict:
    write(steward, subject, "core/has-version", "1.0", "code", now=at("2026-05-01T09:00"))
    conflict = write(member, subject, "core/has-version", "2.0", "agent-note").conflict
    assert conflict.kind == "outranked"
    return conflict


def test_every_conflict_kind_has_its_own_explanation():
    assert set(KIND_EXPLANATIONS) == set(ConflictKind.values)
    assert len(set(KIND_EXPLANATIONS.values())) == len(KIND_EXPLANATIONS)
    assert kind_explanation("novel") == "A conflict of kind “novel”."


def test_every_row_of_the_comparison_is_compared():
    assert [field for field, _ in ROWS] == list(COMPARED)


def test_queue_and_page_say_the_kind_in_words_and_both_sides(as_steward, world):
    queue = as_steward.get(reverse("conflicts")).content.decode()
    assert kind_explanation("commitment") in queue
    page = as_steward.get(reverse("conflict", args=[world.conflict.pk])).content.decode()
    assert kind_explanation("commitment") in page
    assert "core/decided-against and core/prefers exclude each other" in page
    assert '<span class="predicate">core/decided-against</span> <bdi>GraphQL</bdi></span>' in page


def test_the_fields_that_differ_are_marked_and_those_that_agree_are_not(as_steward, world):
    response = as_steward.get(reverse("conflict", args=[world.conflict.pk]))
    differs = {row["field"] for row in response.context["rows"] if row["differs"]}
    assert {"predicate", "source", "epistemic", "author", "evidence", "role"} <= differs
    assert "object" not in differs and "statement" not in differs


def test_queue_links_carry_the_queues_filters_without_the_page(as_steward, steward, member, world):
    version_conflict(steward, member, "svc-a")
    page = as_steward.get(reverse("conflicts"), {"kind": "outranked", "page": "1"})
    assert "?queue=kind%3Doutranked" in page.content.decode()


def test_a_ruling_goes_to_the_next_conflict_of_the_filtered_queue(as_steward, steward, member):
    first = version_conflict(steward, member, "svc-a")
    write(
        steward, "api", "core/decided-against", "GraphQL", "decision-record", epistemic="commitment"
    )
    write(member, "api", "core/prefers", "GraphQL", "session-log")
    second = version_conflict(steward, member, "svc-b")
    url = reverse("conflict-resolve", args=[first.pk])
    post = {"action": "dismiss", "reason": "noise", "queue": "kind=outranked&page=2"}
    response = as_steward.post(url, post)
    assert response.status_code == 303
    location = urlsplit(response["Location"])
    assert location.path == reverse("conflict", args=[second.pk])
    assert parse_qs(location.query) == {"queue": ["kind=outranked"]}

    # htmx: the browser is sent there; and after the last one, the queue says it is empty.
    post = {"action": "coexist", "reason": "both hold", "queue": "kind=outranked"}
    url = reverse("conflict-resolve", args=[second.pk])
    response = as_steward.post(url, post, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("conflicts") + "?kind=outranked"
    shown = as_steward.get(response["HX-Redirect"]).content.decode()
    assert "Queue empty" in shown and "resolved: both stand" in shown
    assert Conflict.objects.open().count() == 1


def test_a_ruling_with_a_bad_reason_by_htmx_answers_400_with_the_rulings_only(as_steward, world):
    url = reverse("conflict-resolve", args=[world.conflict.pk])
    response = as_steward.post(
        url,
        {"action": "dismiss", "reason": " ", "queue": "kind=commitment"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert body.strip().startswith('<div id="rulings">') and "Say why" in body
    assert 'name="queue" value="kind=commitment"' in body


def test_truth_slot_panel_on_the_subject_page_shows_values_rationale_and_staleness(
    as_member, steward, member
):
    conflict = version_conflict(steward, member, "AuthService")
    recompute_slot(conflict.scope_id, conflict.subject_id, conflict.predicate_id)
    url = reverse("subject", args=[conflict.subject_id])
    page = as_member.get(url).content.decode()
    assert "one value, held by 1 claim" in page and "Decided by detection" in page
    assert "stale" not in page.lower().split("truth slots")[1].split("</article>")[0]
    mark_slots_stale(conflict.predicate_id, "the predicate's policy changed")
    page = as_member.get(url).content.decode()
    assert "status-stale" in page and "the predicate&#x27;s policy changed" in page


def test_advice_is_shown_only_after_a_steward_asks_and_a_member_may_not_ask(
    as_steward, as_member, steward, member
):
    conflict = version_conflict(steward, member, "AuthService")
    page_url = reverse("conflict", args=[conflict.pk])
    ask_url = reverse("conflict-advice", args=[conflict.pk])
    assert "The adjudicator&#x27;s advice" not in as_steward.get(page_url).content.decode()
    assert "Ask the adjudicator" not in as_member.get(page_url).content.decode()
    assert as_member.post(ask_url).status_code == 403

    response = as_steward.post(ask_url, {"queue": "kind=outranked"})
    assert response.status_code == 303
    assert response["Location"].endswith("?advice=1&queue=kind%3Doutranked#advice-panel")
    page = as_steward.get(response["Location"]).content.decode()
    # No model is configured: the predicate's deterministic policy speaks, and says so.
    assert "No verdict: no adjudicator is configured." in page
    assert "one value, held by 1 claim" in page
    assert not Adjudication.objects.exists()

    partial = as_steward.post(ask_url, headers={"HX-Request": "true"}).content.decode()
    assert (
        partial.strip().startswith('<div id="advice-panel"')
        and "no adjudicator is configured" in partial
    )
    assert Conflict.objects.get(pk=conflict.pk).is_open
