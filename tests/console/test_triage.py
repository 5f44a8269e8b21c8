"""Triage at speed on the Candidates queue, the fact page that does the work (issue 13)."""

import json
import re
from datetime import UTC, datetime
from urllib.parse import quote
from uuid import UUID

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from admissions.actions import file_challenge, record_verdict
from admissions.models import Record
from admissions.selectors import fact_status
from admissions.status import Finding, Status
from console.explain import Part, explanation_parts
from memories.store.models import Fact
from memories.write.actions import invalidate_fact, resolve_conflict
from tests.console.conftest import write

pytestmark = pytest.mark.django_db

USES = {"predicate": "core/uses"}


def said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


# --- the candidates queue -------------------------------------------------------------


def test_a_rows_admit_rules_on_that_candidate_only_and_reloads_at_the_next_row(as_steward, world):
    redis, kafka, celery = world.candidates
    url = reverse("candidates") + "?predicate=core%2Fuses"
    post = {"facts": str(kafka.pk), "verdict": "admitted", "ground": "in compose", "row": "1"}
    response = as_steward.post(url, post)
    assert response.status_code == 303
    assert response["Location"] == f"{url}#row-{celery.pk}"
    assert said(response) == ["Admitted: shoply core/uses Kafka."]
    assert [fact_status(f).status for f in (redis, kafka, celery)] == [
        "candidate",
        "admitted",
        "candidate",
    ]
    assert Record.objects.get(fact=kafka).ground == "in compose"


def test_the_last_rows_ruling_puts_the_steward_on_the_row_before_it(as_steward, world):
    _, kafka, celery = world.candidates
    url = reverse("candidates") + "?predicate=core%2Fuses"
    post = {"facts": str(celery.pk), "verdict": "rejected", "ground": "a guess", "row": "1"}
    response = as_steward.post(url, post)
    assert response["Location"] == f"{url}#row-{kafka.pk}"
    assert said(response) == ["Rejected: shoply core/uses Celery."]


def test_a_rows_ruling_with_htmx_answers_the_list_without_it_focused_on_the_next_row(
    as_steward, world
):
    redis, kafka, _ = world.candidates
    url = reverse("candidates") + "?predicate=core%2Fuses"
    post = {"facts": str(redis.pk), "verdict": "rejected", "ground": "stale", "row": "1"}
    response = as_steward.post(url, post, headers={"HX-Request": "true"})
    assert response.status_code == 200
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="candidate-list"')
    assert f'id="row-{redis.pk}"' not in page
    focused = re.findall(r'<a class="row-link" href="/facts/([0-9a-f-]+)/[^"]*" autofocus', page)
    assert focused == [str(kafka.pk)]


def test_a_rows_ruling_without_a_ground_is_refused_beside_that_row(as_steward, world):
    redis = world.candidates[0]
    post = {"facts": str(redis.pk), "verdict": "admitted", "ground": "   ", "row": "1"}
    response = as_steward.post(reverse("candidates"), post)
    assert response.status_code == 400
    page = response.content.decode()
    assert "Say why: a ground is required." in page
    row = page[page.index(f'id="row-{redis.pk}"') :]
    row = row[: row.index("</tr>")]
    assert 'data-key="a" open' in row and 'id="a-error-' in row
    assert not Record.objects.exists() or not Record.objects.filter(fact=redis).exists()


def test_the_queue_shows_evidence_the_open_conflict_and_a_batch_form_above_the_list(
    as_steward, world
):
    page = as_steward.get(reverse("candidates")).content.decode()
    assert "ADR-12" in page
    row = page[page.index(f'id="row-{world.newcomer.pk}"') :]
    row = row[: row.index("</tr>")]
    assert f'href="/conflicts/{world.conflict.pk}/"' in row and "In an open conflict" in row
    redis_row = page[page.index(f'id="row-{world.candidates[0].pk}"') :]
    assert "In an open conflict" not in redis_row[: redis_row.index("</tr>")]
    assert page.index('id="batch-form"') < page.index('id="candidate-table"')
    assert 'id="select-all"' in page and 'id="selected-count"' in page


def test_queue_links_carry_the_filters_and_a_verdict_on_the_fact_page_leads_to_the_next(
    as_steward, world
):
    redis, kafka, celery = world.candidates
    page = as_steward.get(reverse("candidates"), USES).content.decode()
    queue = quote("predicate=core%2Fuses", safe="")
    assert f'href="/facts/{redis.pk}/?queue={queue}"' in page

    fact_page = as_steward.get(reverse("fact", args=[redis.pk]), {"queue": "predicate=core%2Fuses"})
    assert 'name="queue" value="predicate=core%2Fuses"' in fact_page.content.decode()
    post = {"verdict": "admitted", "ground": "seen", "queue": "predicate=core%2Fuses"}
    response = as_steward.post(reverse("fact-verdict", args=[redis.pk]), post)
    assert response.status_code in (302, 303)
    assert response["Location"] == f"/facts/{kafka.pk}/?queue={queue}"
    assert said(response) == ["Admitted: shoply core/uses Redis. Next candidate."]

    for fact in (kafka, celery):
        response = as_steward.post(reverse("fact-verdict", args=[fact.pk]), post)
    assert response["Location"] == "/candidates/?predicate=core%2Fuses"
    assert "Queue empty" in said(response)[-1]


def test_a_verdict_on_a_fact_not_opened_from_the_queue_stays_on_the_fact(as_steward, world):
    redis = world.candidates[0]
    post = {"verdict": "rejected", "ground": "seen"}
    response = as_steward.post(reverse("fact-verdict", args=[redis.pk]), post)
    assert response["Location"] == f"/facts/{redis.pk}/"


# --- the fact page ----------------------------------------------------------------------


def test_the_explanation_humanizes_times_and_links_records_by_their_number(
    as_steward, member, world
):
    file_challenge(
        actor=member, fact_id=world.admitted.pk, ground="old", evidence=[{"ref": "PR-1"}]
    )
    page = as_steward.get(reverse("fact", args=[world.admitted.pk])).content.decode()
    explanation = page[page.index('<p class="explanation">') :]
    explanation = explanation[: explanation.index("</p>")]
    assert "+00:00 " not in explanation and "+00:00)" not in explanation
    assert re.search(r">\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC</time>", explanation)
    verdict, challenge = Record.objects.filter(fact=world.admitted).order_by("inserted_at", "id")
    assert f'<a href="#record-{verdict.pk}">#1</a>' in explanation
    assert f'<a href="#record-{challenge.pk}">#2</a>' in explanation
    assert str(challenge.pk)[:8] + " " not in explanation
    assert f'id="record-{challenge.pk}"' in page


def test_explanation_parts_split_times_and_named_records_only():
    record = UUID("1a2b3c4d-0000-0000-0000-000000000000")
    text = "Suspended by 1a2b3c4d from deadbeef at 2026-11-03T14:05:00+00:00."
    finding = Finding(3, text, (record,))
    status = Status(record, "suspended", None, (record,), (), 1, 1, (finding,))
    assert explanation_parts(status, {record: 2}) == [
        [
            Part(text="Suspended by "),
            Part(record=record, number=2),
            Part(text=" from deadbeef at "),
            Part(time=datetime(2026, 11, 3, 14, 5, tzinfo=UTC)),
            Part(text="."),
        ]
    ]


def test_a_challenge_queued_beyond_the_cap_is_badged_queued(as_steward, steward, member, world):
    # Two admitted facts: the cap is one suspension per account.
    second = write(steward, "AuthService", "core/uses", "Vault", "code").fact
    record_verdict(actor=steward, fact_id=second.pk, verdict="admitted", ground="in code")
    evidence = [{"ref": "PR-2"}]
    file_challenge(actor=member, fact_id=world.admitted.pk, ground="old", evidence=evidence)
    file_challenge(actor=member, fact_id=second.pk, ground="gone", evidence=evidence)
    assert fact_status(second).queued
    page = as_steward.get(reverse("fact", args=[second.pk])).content.decode()
    assert '<span class="badge status-queued">queued</span>' in page
    assert '<span class="badge status-open">open</span>' not in page
    first = as_steward.get(reverse("fact", args=[world.admitted.pk])).content.decode()
    assert '<span class="badge status-open">open</span>' in first


def test_admit_is_not_offered_on_a_suspended_fact_and_the_page_says_why(as_steward, member, world):
    page = as_steward.get(reverse("fact", args=[world.candidates[0].pk])).content.decode()
    assert 'value="admitted">Admit</button>' in page
    file_challenge(
        actor=member, fact_id=world.admitted.pk, ground="old", evidence=[{"ref": "PR-1"}]
    )
    page = as_steward.get(reverse("fact", args=[world.admitted.pk])).content.decode()
    assert 'value="admitted">Admit</button>' not in page
    assert "Admit is not offered" in page and "Refute the challenge" in page
    assert 'value="rejected" class="danger">Reject</button>' in page


def test_the_fact_pages_actions_are_collapsed_under_their_names(as_steward, world):
    page = as_steward.get(reverse("fact", args=[world.candidates[0].pk])).content.decode()
    for key, name in [("a", "Admit"), ("r", "Reject"), ("c", "Challenge")]:
        assert re.search(
            rf'<details class="action" data-key="{key}">\s*<summary>{name}</summary>', page
        )
    assert re.search(r'<details class="action">\s*<summary>Correct</summary>', page)


def test_correct_takes_evidence_for_the_replacement(as_steward, world):
    redis = world.candidates[0]
    post = {
        "object": "Redis",
        "source_type": "code",
        "confidence": "0.9",
        "epistemic": redis.epistemic,
        "evidence": "docker-compose.yml | redis:7\nhttps://example.org/ticket/1",
        "ground": "seen in compose",
    }
    response = as_steward.post(reverse("fact-correct", args=[redis.pk]), post)
    assert response.status_code == 302
    redis.refresh_from_db()
    replacement = Fact.objects.get(pk=redis.superseded_by_id)
    assert replacement.evidence == [
        {"ref": "docker-compose.yml", "quote": "redis:7"},
        {"ref": "https://example.org/ticket/1", "quote": ""},
    ]


def test_correct_without_evidence_keeps_the_facts_own(as_steward, world):
    post = {
        "object": "GraphQL",
        "source_type": "decision-record",
        "confidence": "0.8",
        "epistemic": world.decided.epistemic,
        "evidence": "",
        "ground": "restated",
    }
    as_steward.post(reverse("fact-correct", args=[world.decided.pk]), post)
    world.decided.refresh_from_db()
    replacement = Fact.objects.get(pk=world.decided.superseded_by_id)
    assert replacement.evidence == world.decided.evidence


def test_correct_refuses_an_evidence_line_without_a_reference(as_steward, world):
    redis = world.candidates[0]
    post = {
        "object": "Redis",
        "source_type": "code",
        "confidence": "0.9",
        "epistemic": redis.epistemic,
        "evidence": "| a quote alone",
        "ground": "seen",
    }
    response = as_steward.post(reverse("fact-correct", args=[redis.pk]), post)
    assert response.status_code == 400
    assert "Each line needs a reference" in response.content.decode()
    redis.refresh_from_db()
    assert redis.superseded_by_id is None


# --- the audit feed ---------------------------------------------------------------------


def test_the_audit_feed_reads_a_kept_candidate_as_words_with_links(as_steward, steward, world):
    resolve_conflict(
        actor=steward,
        conflict_id=world.conflict.pk,
        action="keep",
        keep=[world.decided.pk],
        reason="the ADR stands",
    )
    page = as_steward.get(reverse("audit"), {"action": "resolved-conflict"}).content.decode()
    decided = (
        f'<a href="/facts/{world.decided.pk}/">'
        "<bdi>api-layer core/decided-against GraphQL</bdi></a>"
    )
    assert f"Kept candidate {decided} in " in page
    assert f'<a href="/conflicts/{world.conflict.pk}/"><bdi>the conflict on api-layer' in page
    assert f'ended <a href="/facts/{world.newcomer.pk}/">' in page
    assert 'Resolution: <span class="from">none</span> → <span class="to">kept one side' in page
    assert "kept: " not in page and str(world.decided.pk)[:8] + "…" not in page
    assert re.search(r">\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC</time>", page)


def test_the_audit_feed_reads_a_verdict_and_its_status_change(as_steward, world):
    page = as_steward.get(reverse("audit"), {"action": "recorded-verdict"}).content.decode()
    admitted = (
        f'<a href="/facts/{world.admitted.pk}/"><bdi>AuthService core/has-version 2.0.0</bdi></a>'
    )
    assert f"Admitted {admitted}" in page
    assert 'Status: <span class="from">candidate</span> → <span class="to">admitted</span>' in page


def test_the_audit_feed_links_only_what_the_viewer_may_open(as_member, steward, member, world):
    # A private fact of the steward's, superseded in the shared scope's feed.
    private = write(steward, "laptop", "core/uses", "vim", "user-assertion", bucket="user").fact
    invalidate_fact(actor=steward, fact_id=private.pk, reason="switched")
    page = as_member.get(reverse("audit"), {"action": "invalidated"}).content.decode()
    assert f"/facts/{private.pk}/" not in page
    assert "Invalidated a fact you cannot open" in page


def test_the_action_filter_is_a_list_of_readable_labels(as_steward, world):
    page = as_steward.get(reverse("audit")).content.decode()
    assert '<select name="action"' in page
    assert '<option value="resolved-conflict">Conflict resolved</option>' in page
    response = as_steward.get(reverse("audit"), {"action": "opened-conflict"})
    assert {entry.action for entry in response.context["page"]} == {"opened-conflict"}
    assert response.context["form"].is_valid()


def test_an_unknown_action_in_the_filter_is_named_as_the_problem(as_steward, world):
    response = as_steward.get(reverse("audit"), {"action": "no-such-thing"})
    assert "action" in response.context["form"].errors


def test_the_export_stays_the_machine_format(as_steward, steward, world):
    resolve_conflict(
        actor=steward, conflict_id=world.conflict.pk, action="dismiss", reason="not a clash"
    )
    response = as_steward.get(
        reverse("audit-export", args=["jsonl"]), {"action": "resolved-conflict"}
    )
    (line,) = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert line["action"] == "resolved-conflict"
    assert line["after"]["resolution"] == "dismissed" and line["target_id"] == str(
        world.conflict.pk
    )
    assert line["at"].endswith("+00:00")


def test_a_challenge_past_its_flood_cap_is_told_it_is_queued_with_no_effect(steward, member):
    from tests.admissions.conftest import write_fact
    from tests.console.conftest import signed_in

    facts = [write_fact(steward, f"lib-{n}") for n in range(8)]  # cap 2 of 8 admitted
    for fact in facts:
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="checked")
    client = signed_in(member)
    said = []
    for fact in facts[:3]:
        response = client.post(
            reverse("fact-challenge", args=[fact.pk]),
            {"ground": "outdated", "evidence": "PR-1"},
        )
        assert response.status_code == 302
        said.append([str(m) for m in get_messages(response.wsgi_request)][-1])
    assert "queued" not in said[0] and "queued" not in said[1]
    assert "Queued with no effect" in said[2] and "flood cap" in said[2]
    assert said[0].startswith(f"Challenge filed against {facts[0]}. Suspends the fact")
