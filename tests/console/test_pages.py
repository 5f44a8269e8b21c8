"""The console's pages over HTTP, on the real database: who sees what, who may do what."""

import csv as csv_module
import io
import json

import pytest
from django.urls import reverse

from admissions.actions import file_challenge, record_verdict
from admissions.models import Record
from admissions.selectors import fact_status
from console.csv_cells import safe_cell
from memories.store.models import AuditEntry, Conflict, Fact
from memories.write.actions import invalidate_fact
from tests.console.conftest import write

pytestmark = pytest.mark.django_db

EVERY_PAGE = ["dashboard", "conflicts", "challenges", "facts", "entities", "audit", "changes"]


# --- signing in --------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*EVERY_PAGE, "candidates"])
def test_every_page_sends_a_signed_out_visitor_to_sign_in(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_sign_in_form_has_the_labels_the_browser_tests_rely_on(client):
    page = client.get(reverse("login")).content.decode()
    assert '<label for="id_username">Username</label>' in page
    assert '<label for="id_password">Password</label>' in page


@pytest.mark.parametrize("name", EVERY_PAGE)
def test_every_page_renders_for_a_member(as_member, world, name):
    assert as_member.get(reverse(name)).status_code == 200


def test_candidates_link_is_in_the_navigation_of_stewards_only(as_steward, as_member, world):
    assert 'href="/candidates/"' in as_steward.get(reverse("dashboard")).content.decode()
    assert 'href="/candidates/"' not in as_member.get(reverse("dashboard")).content.decode()
    assert as_member.get(reverse("candidates")).status_code == 403


# --- dashboard ------------------------------------------------------------------------------


def test_dashboard_counts_each_queue_in_the_viewers_scopes(as_steward, as_outsider, world):
    counts = {q.label: q.count for q in as_steward.get(reverse("dashboard")).context["queues"]}
    assert counts == {
        "Open conflicts": 1,
        # the decided-against fact, the newcomer and the three shoply facts
        "Candidates awaiting a verdict": 5,
        "Open challenges": 0,
        "Suspended facts": 0,
    }
    outsider_counts = [q.count for q in as_outsider.get(reverse("dashboard")).context["queues"]]
    assert outsider_counts == [0, 0, 0, 0]


# --- conflicts ------------------------------------------------------------------------------


def test_conflict_queue_lists_subject_predicate_and_objects_linking_by_subject(as_member, world):
    page = as_member.get(reverse("conflicts")).content.decode()
    link = reverse("conflict", args=[world.conflict.pk])
    assert f'href="{link}"><span class="subject"><bdi>api-layer</bdi></span>: ' in page
    assert '<span class="predicate">core/prefers</span> <bdi>GraphQL</bdi></span></a>' in page


def test_conflict_queue_filters_by_state_kind_and_scope_in_each_states_order(
    as_steward, as_outsider, steward, member, outsider, other_scope, world
):
    from memories.write.actions import resolve_conflict
    from tests.conftest import at

    from .conftest import write

    def conflict_on(subject, scope="project"):
        decision = {"epistemic": "commitment", "scope": scope, "now": at("2026-05-01T09:00")}
        write(steward, subject, "core/decided-against", "GraphQL", "decision-record", **decision)
        return write(member, subject, "core/prefers", "GraphQL", "session-log", scope=scope)

    other_scope.members.add(member)
    second = conflict_on("web-layer").conflict
    third = conflict_on("db-layer").conflict
    elsewhere = conflict_on("edge", scope="elsewhere").conflict
    resolve_conflict(actor=steward, conflict_id=third.pk, action="dismiss", reason="noise")

    def listed(client, **query):
        response = client.get(reverse("conflicts"), query)
        assert response.status_code == 200
        return [item.pk for item in response.context["page"]]

    opened = sorted([world.conflict, second, elsewhere], key=lambda c: (c.opened_at, c.pk))
    assert listed(as_steward) == [c.pk for c in opened]
    in_project = [c.pk for c in opened if c.scope_id == world.conflict.scope_id]
    assert len(in_project) == 2
    assert listed(as_steward, scope="project") == in_project
    assert listed(as_steward, state="resolved") == [third.pk]
    everything = sorted(
        [world.conflict, second, third, elsewhere], key=lambda c: (c.opened_at, c.pk), reverse=True
    )
    assert listed(as_steward, state="all") == [c.pk for c in everything]
    assert listed(as_steward, kind=world.conflict.kind, scope="project") == in_project
    other_kind = next(k for k in ("backdated", "crawler") if k != world.conflict.kind)
    assert listed(as_steward, kind=other_kind) == []
    # An account sees only its own scopes' conflicts, whatever it asks for.
    assert listed(as_outsider, state="all") == [elsewhere.pk]
    page = as_steward.get(reverse("conflicts"), {"state": "resolved"}).content.decode()
    assert f"dismissed by {steward.username}" in page


def test_conflict_queue_escapes_candidates_objects(as_steward, steward, member, world):
    from tests.conftest import at

    from .conftest import write

    decision = {"epistemic": "commitment", "now": at("2026-05-01T09:00")}
    write(
        steward, "ui", "core/decided-against", '<b>"Fun" & games</b>', "decision-record", **decision
    )
    write(member, "ui", "core/prefers", '<b>"Fun" & games</b>', "session-log")
    page = as_steward.get(reverse("conflicts")).content.decode()
    assert "<b>" not in page
    assert "</span> <bdi>&lt;b&gt;&quot;Fun&quot; &amp; games&lt;/b&gt;</bdi></span>" in page


def test_conflict_page_shows_candidates_in_recorded_order_with_no_recommendation(as_steward, world):
    response = as_steward.get(reverse("conflict", args=[world.conflict.pk]))
    candidates = [c["fact"].pk for c in response.context["candidates"]]
    assert candidates == [world.decided.pk, world.newcomer.pk]
    page = response.content.decode().lower()
    assert "recommended" not in page.replace("none is recommended", "")
    assert "checked" not in page and "selected>" not in page.split("<main")[1].split("<svg")[0]
    assert page.count(">keep this</button>") == 2
    assert "trust rank 3" in page and "trust rank 2" in page
    assert '<svg class="timeline"' in page


def test_member_sees_the_conflict_but_no_steward_controls(as_member, world):
    page = as_member.get(reverse("conflict", args=[world.conflict.pk])).content.decode()
    assert "GraphQL" in page
    for control in ("Keep this</button>", "Both stand</button>", "Dismiss</button>"):
        assert control not in page


def test_forged_resolution_is_refused_for_a_member_and_hidden_from_an_outsider(
    as_member, as_outsider, world
):
    url = reverse("conflict-resolve", args=[world.conflict.pk])
    post = {"action": "keep", "keep": str(world.decided.pk), "reason": "I say so"}
    assert as_member.post(url, post).status_code == 403
    assert as_outsider.post(url, post).status_code == 404
    assert as_outsider.get(reverse("conflict", args=[world.conflict.pk])).status_code == 404
    assert Conflict.objects.open().count() == 1


def test_keep_this_with_a_reason_resolves_and_invalidates_the_other(as_steward, world):
    url = reverse("conflict-resolve", args=[world.conflict.pk])
    post = {"action": "keep", "keep": str(world.decided.pk), "reason": "the ADR stands"}
    response = as_steward.post(url, post)
    assert response.status_code == 303
    assert response["Location"] == reverse("conflicts")
    world.newcomer.refresh_from_db()
    assert world.newcomer.invalidation_reason == "the ADR stands"
    assert Conflict.objects.open().count() == 0


def test_a_ruling_without_a_reason_is_refused_naming_the_field(as_steward, world):
    url = reverse("conflict-resolve", args=[world.conflict.pk])
    response = as_steward.post(url, {"action": "dismiss", "reason": "  "})
    assert response.status_code == 400
    assert "Say why: a ruling needs a reason." in response.content.decode()
    assert Conflict.objects.open().count() == 1


# --- facts and their records ----------------------------------------------------------------


def test_search_matches_subject_names_and_results_link_by_object(as_member, world):
    response = as_member.get(reverse("facts"), {"q": "shop"})
    page = response.content.decode()
    assert {f.subject.name for f in response.context["page"]} == {"shoply"}
    link = reverse("fact", args=[world.candidates[0].pk])
    assert f'href="{link}"><bdi>Redis</bdi></a>' in page


@pytest.mark.parametrize(
    ("status", "expected"),
    [("admitted", {"2.0.0"}), ("disputed", {"GraphQL"}), ("candidate", None)],
)
def test_facts_browser_filters_by_status(as_member, world, status, expected):
    response = as_member.get(reverse("facts"), {"status": status})
    objects = {fact.object_display for fact in response.context["page"]}
    if expected is None:
        expected = {"GraphQL", "Redis", "Kafka", "Celery"}
    assert objects == expected


def test_each_admission_status_filter_lists_exactly_the_facts_of_that_status(
    as_steward, world, steward, member
):
    redis, kafka, _ = world.candidates
    record_verdict(actor=steward, fact_id=redis.pk, verdict="rejected", ground="not used")
    file_challenge(actor=member, fact_id=world.admitted.pk, ground="outdated", evidence=["x"])
    system = Fact.objects.filter(bucket="system")
    for status in ("candidate", "admitted", "rejected", "suspended"):
        listed = as_steward.get(reverse("facts"), {"status": status, "per_page": 100})
        shown = {fact.pk for fact in listed.context["page"]}
        assert shown == {f.pk for f in system if fact_status(f).status == status}, status
        assert shown or status == "admitted"  # the one admitted fact is suspended now
    assert kafka.pk in {
        f.pk for f in as_steward.get(reverse("facts"), {"status": "candidate"}).context["page"]
    }


def test_member_challenge_with_evidence_suspends_and_the_page_explains(as_member, world):
    url = reverse("fact-challenge", args=[world.admitted.pk])
    post = {"ground": "3.0 shipped", "evidence": "CHANGELOG.md | 3.0.0 released\nPR-88"}
    assert as_member.post(url, post).status_code == 302
    record = Record.objects.challenges().get()
    assert record.evidence == [
        {"ref": "CHANGELOG.md", "quote": "3.0.0 released"},
        {"ref": "PR-88", "quote": ""},
    ]
    status = fact_status(world.admitted)
    assert status.status == "suspended"
    page = as_member.get(reverse("fact", args=[world.admitted.pk])).content.decode()
    # The explanation's words, with its times and record ids humanized (test_triage.py).
    assert "status-suspended" in page and "Suspended by the open evidenced challenge" in page
    assert "Refute</button>" not in page


def test_a_challenge_without_evidence_is_recorded_as_unevidenced(as_member, world):
    url = reverse("fact-challenge", args=[world.admitted.pk])
    as_member.post(url, {"ground": "feels old", "evidence": "  \n "})
    assert Record.objects.challenges().get().evidence is None
    assert fact_status(world.admitted).status == "admitted"


def test_steward_refutes_a_challenge_and_the_fact_is_admitted_again(as_steward, member, world):
    challenge = file_challenge(
        actor=member, fact_id=world.admitted.pk, ground="wrong", evidence=["PR-88"]
    )
    url = reverse("challenge-refute", args=[challenge.pk])
    response = as_steward.post(url, {"ground": "2.0.0 is still deployed"})
    assert response.status_code == 302
    assert fact_status(world.admitted).status == "admitted"


def test_member_refutation_and_verdict_are_refused_server_side(as_member, member, world):
    challenge = file_challenge(
        actor=member, fact_id=world.admitted.pk, ground="wrong", evidence=["PR-88"]
    )
    refute = reverse("challenge-refute", args=[challenge.pk])
    assert as_member.post(refute, {"ground": "nope"}).status_code == 403
    verdict = reverse("fact-verdict", args=[world.candidates[0].pk])
    assert as_member.post(verdict, {"verdict": "admitted", "ground": "me"}).status_code == 403
    assert Record.objects.count() == 2  # the admission of the world and the challenge


def test_htmx_challenge_swaps_the_status_panel_in_place(as_member, world):
    url = reverse("fact-challenge", args=[world.admitted.pk])
    response = as_member.post(
        url, {"ground": "3.0 shipped", "evidence": "PR-88"}, headers={"HX-Request": "true"}
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert page.lstrip().startswith('<div id="fact-status">')
    assert "status-suspended" in page


def test_outsider_cannot_see_or_challenge_a_fact(as_outsider, world):
    assert as_outsider.get(reverse("fact", args=[world.admitted.pk])).status_code == 404
    url = reverse("fact-challenge", args=[world.admitted.pk])
    assert as_outsider.post(url, {"ground": "x", "evidence": "y"}).status_code == 404
    assert not Record.objects.challenges().exists()


def test_steward_correction_supersedes_and_opens_the_replacement(as_steward, world):
    url = reverse("fact-correct", args=[world.admitted.pk])
    post = {
        "object": "2.1.0",
        "source_type": "code",
        "confidence": "0.95",
        "epistemic": "observation",
        "ground": "bumped in PR-90",
    }
    response = as_steward.post(url, post)
    world.admitted.refresh_from_db()
    replacement = Fact.objects.get(pk=world.admitted.superseded_by_id)
    assert response["Location"] == reverse("fact", args=[replacement.pk])
    assert replacement.object_lit == "2.1.0"
    assert fact_status(replacement).status == "admitted"


def test_fact_page_lists_records_oldest_first_and_receipts(as_member, member, world):
    from memories.write.actions import record_outcome

    file_challenge(actor=member, fact_id=world.admitted.pk, ground="first", evidence=None)
    # One open challenge per account and fact: the second is another account's.
    file_challenge(
        actor=world.admitted.author, fact_id=world.admitted.pk, ground="second", evidence=None
    )
    record_outcome(actor=member, fact_ids=[world.admitted.pk])
    page = as_member.get(reverse("fact", args=[world.admitted.pk])).content.decode()
    assert page.index("seen in code") < page.index("“first”") < page.index("“second”")
    assert "reported by mira" in page


# --- candidates and batch review --------------------------------------------------------------


def test_candidate_filters_narrow_by_source_and_predicate(as_steward, world):
    response = as_steward.get(reverse("candidates"), {"predicate": "core/uses"})
    assert [f.object_display for f in response.context["page"]] == ["Redis", "Kafka", "Celery"]
    response = as_steward.get(reverse("candidates"), {"source": "decision-record"})
    assert [f.object_display for f in response.context["page"]] == ["GraphQL"]


def test_a_scope_steward_reviews_only_the_candidates_of_the_scopes_they_steward(
    scope_steward, other_scope, steward, world
):
    from tests.console.conftest import signed_in, write

    # A member elsewhere, with a candidate there: readable, but not theirs to review.
    other_scope.members.add(scope_steward, steward)
    write(steward, "svc-x", "core/uses", "Elsewhere", "code", scope=other_scope.name)
    response = signed_in(scope_steward).get(reverse("candidates"))
    assert response.status_code == 200
    shown = {fact.scope.name for fact in response.context["page"]}
    assert shown == {"project"}
    everywhere = signed_in(steward).get(reverse("candidates"), {"per_page": 100})
    assert {fact.scope.name for fact in everywhere.context["page"]} == {"project", "elsewhere"}


def test_batch_review_applies_each_item_on_its_own_and_lists_both(as_steward, steward, world):
    from admissions.actions import record_verdict

    redis, kafka, celery = world.candidates
    record_verdict(actor=steward, fact_id=kafka.pk, verdict="admitted", ground="earlier")
    post = {
        "facts": [str(redis.pk), str(kafka.pk), "00000000-0000-0000-0000-000000000000"],
        "verdict": "rejected",
        "ground": "session noise",
    }
    response = as_steward.post(reverse("candidates"), post)
    assert response.status_code == 200
    applied = [o.label for o in response.context["applied"]]
    refused = {o.label: o.why for o in response.context["refused"]}
    assert applied == ["shoply core/uses Redis"]
    assert refused == {
        "shoply core/uses Kafka": "no longer a candidate (now admitted)",
        "00000000-0000-0000-0000-000000000000": "not found",
    }
    assert fact_status(redis).status == "rejected"
    assert fact_status(celery).status == "candidate"


def test_batch_review_needs_a_ground_and_a_selection(as_steward, world):
    response = as_steward.post(reverse("candidates"), {"verdict": "rejected", "ground": ""})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Select at least one candidate." in page
    assert "Say why: a ground is required." in page


# --- challenges list ------------------------------------------------------------------------


def test_challenges_list_shows_the_cap_per_account_and_what_is_queued(
    as_member, member, steward, world
):
    for name in ("a", "b", "c", "d", "e", "f", "g"):
        fact = write_admitted(steward, name)
        file_challenge(actor=member, fact_id=fact.pk, ground="wrong", evidence=["ref"])
    response = as_member.get(reverse("challenges"))
    [(_scope, usage)] = response.context["accounts"]
    # 8 admitted facts → cap 2: two challenges suspend, five wait
    assert (usage.author_name, usage.cap, len(usage.in_effect), len(usage.queued)) == (
        "mira",
        2,
        2,
        5,
    )
    assert response.content.decode().count("queued beyond the cap</span>") == 5


def write_admitted(steward, name):
    from admissions.actions import record_verdict

    fact = write(steward, name, "core/uses", "x", "code").fact
    record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="ok")
    return fact


# --- audit ------------------------------------------------------------------------------------


def test_audit_feed_filters_human_and_automatic_changes(as_steward, world):
    human = as_steward.get(reverse("audit"), {"who": "human"}).context["page"]
    automatic = as_steward.get(reverse("audit"), {"who": "automatic"}).context["page"]
    assert all(entry.actor_id and not entry.rule for entry in human)
    # Automatic: every entry naming its rule, a write-path one credited to its writer too.
    assert all(entry.rule for entry in automatic)
    assert len(human) + len(automatic) == AuditEntry.objects.count()


def test_audit_exports_stream_csv_and_jsonl_with_the_filters(as_steward, world):
    response = as_steward.get(
        reverse("audit-export", args=["jsonl"]), {"action": "opened-conflict"}
    )
    assert response.streaming
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [line["action"] for line in lines] == ["opened-conflict"]
    assert lines[0]["after"]["kind"] == "commitment"
    response = as_steward.get(reverse("audit-export", args=["csv"]))
    rows = b"".join(response.streaming_content).decode().splitlines()
    assert rows[0].startswith("id,at,scope,actor,action")
    assert len(rows) == 1 + AuditEntry.objects.count()


def test_audit_of_another_scope_is_not_exported_to_an_outsider(as_outsider, world, other_scope):
    response = as_outsider.get(reverse("audit-export", args=["jsonl"]))
    lines = b"".join(response.streaming_content).decode().splitlines()
    # Only the outsider's own scope: the world's global steward was appointed there too.
    entries = [json.loads(line) for line in lines]
    assert {(e["scope"], e["action"]) for e in entries} <= {(other_scope.name, "made-steward")}


# --- pagination -------------------------------------------------------------------------------


def test_a_long_queue_counts_one_window_past_the_page_and_still_pages_on(
    as_steward, member, world, monkeypatch
):
    from console.views.common import WindowPaginator

    for n in range(7):
        write(member, "queue", "core/uses", f"tool-{n}", "session-log")
    monkeypatch.setattr(WindowPaginator, "WINDOW", 1)

    def pager(number):
        page = as_steward.get(reverse("candidates"), {"per_page": 5, "page": number})
        return page.content.decode()

    assert "1\u20135 of 6+" in pager(1) and 'page=2" rel="next"' in pager(1)
    assert "6\u201310 of 11+" in pager(2) and 'page=3" rel="next"' in pager(2)
    assert "11\u201312 of 12<" in pager(3) and 'rel="next"' not in pager(3)


def test_conflict_queue_pages_in_order_past_the_end_and_beyond_the_window(
    as_steward, steward, member, world, monkeypatch
):
    from console.views.common import WindowPaginator
    from tests.conftest import at

    from .conftest import write

    for n in range(11):
        subject = f"layer-{n:02}"
        decision = {"epistemic": "commitment", "now": at("2026-05-01T09:00")}
        write(steward, subject, "core/decided-against", "GraphQL", "decision-record", **decision)
        write(
            member,
            subject,
            "core/prefers",
            "GraphQL",
            "session-log",
            now=at(f"2026-05-{n + 2:02}T10:00"),
        )
    everything = [c.pk for c in Conflict.objects.open().order_by("opened_at", "id")]
    assert len(everything) == 12

    def page(**query):
        response = as_steward.get(reverse("conflicts"), {"per_page": 5, **query})
        return [item.pk for item in response.context["page"]], response

    assert page()[0] == everything[:5]
    assert page(page=2)[0] == everything[5:10]
    assert page(page=3)[0] == everything[10:]
    # A page past the end answers with the last page, as Django's paginator does.
    last, response = page(page=9)
    assert last == everything[10:]
    assert response.context["page"].number == 3
    # Counting stops one window past the page shown; later pages stay reachable.
    monkeypatch.setattr(WindowPaginator, "WINDOW", 1)
    rows, response = page(page=2)
    assert rows == everything[5:10]
    assert response.context["page"].paginator.count == 11
    assert response.context["page"].paginator.more


FORMULAS = ["=1+1", "+SUM(A1)", "-2+3", "@SUM(A1)", "\t=1+1", "\r=1+1", " =1+1", "\n@x"]


@pytest.mark.parametrize("reason", FORMULAS)
def test_the_csv_export_defuses_a_reason_a_spreadsheet_would_run(as_member, member, reason):
    # OWASP CSV injection: a leading =, +, -, @ (or TAB/CR, or one after a space) is
    # quoted away in the CSV; the JSON Lines export keeps the reason exact.
    fact = write(member, "billing", "core/uses", "Stripe", "session-log").fact
    invalidate_fact(actor=member, fact_id=fact.id, reason=reason)
    response = as_member.get(reverse("audit-export", args=["csv"]), {"action": "invalidated"})
    rows = list(csv_module.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    reasons = [row[rows[0].index("reason")] for row in rows[1:]]
    stored = AuditEntry.objects.get(action="invalidated").reason
    assert reasons == ["'" + stored]
    response = as_member.get(reverse("audit-export", args=["jsonl"]), {"action": "invalidated"})
    lines = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert [line["reason"] for line in lines] == [stored]


@pytest.mark.parametrize("cell", FORMULAS)
def test_a_cell_a_spreadsheet_would_run_gets_a_quote_in_front(cell):
    assert safe_cell(cell) == "'" + cell


def test_a_plain_or_numeric_cell_is_left_alone():
    assert safe_cell("plain - text") == "plain - text"
    assert safe_cell(-3) == -3
    assert safe_cell(None) is None


def test_an_admitted_fact_offers_no_second_admit_but_still_reject(as_steward, world):
    page = as_steward.get(reverse("fact", args=[world.admitted.pk])).content.decode()
    assert 'value="admitted">Admit</button>' not in page
    assert 'value="rejected" class="danger">Reject</button>' in page
    assert "Already admitted" in page
