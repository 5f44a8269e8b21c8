"""Truth slots against the real database: recompute, staleness, adjudication's commit rule."""

from dataclasses import dataclass, field

import pytest
from django.urls import reverse

from memories.core.verdicts import SemanticsProposal, Verdict
from memories.maintenance.adjudicator import AdjudicationRequest, Answer
from memories.maintenance.tasks import enqueue_slot_recompute, sweep_stale_slots_task
from memories.maintenance.truth import adjudicate_slot, recompute_slot
from memories.store.models import (
    Adjudication,
    AuditEntry,
    Conflict,
    Fact,
    Predicate,
    PredicateProposal,
    TruthSlot,
)
from memories.store.vocabulary import forget_vocabulary
from memories.write.actions import assert_fact, resolve_conflict
from memories.write.reverts import revert_automatic_change
from tests.conftest import at, make_user
from tests.taskqueue import run_queued_tasks, task_statuses

pytestmark = pytest.mark.django_db

NOW = at("2026-06-01T12:00:00")


def write(actor, subject, predicate, obj, source="code", *, t_valid, **extra):
    return assert_fact(
        actor=actor,
        data={
            "scope": "project",
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "source_type": source,
            "t_valid": t_valid,
            **extra,
        },
        now=NOW,
    ).fact


def recompute(fact, **extra):
    return recompute_slot(fact.scope_id, fact.subject_id, fact.predicate_id, now=NOW, **extra)


def make_one_valued(name: str, policy: str = "parallel") -> None:
    """A vocabulary change made outside the admin (no stale marking)."""
    Predicate.objects.filter(name=name).update(cardinality="one", policy=policy)
    forget_vocabulary()


@dataclass
class FakeAdjudicator:
    """An adjudicator that answers from a script and counts how often it is asked."""

    answer: object
    model: str = "fake-model"
    consults_model: bool = True
    requests: list[AdjudicationRequest] = field(default_factory=list)
    during: object = None

    def adjudicate(self, request: AdjudicationRequest) -> Answer:
        self.requests.append(request)
        if self.during is not None:
            self.during()
        answer = self.answer(request) if callable(self.answer) else self.answer
        return answer


def verdict(kind, *, winner=None, confidence=0.9, proposal=None):
    def answer(request: AdjudicationRequest) -> Answer:
        chosen = Verdict(
            kind, confidence, "scripted", request.claim_set_hash, winner=winner, model="fake-model"
        )
        return Answer(chosen, raw_response='{"scripted": true}', proposal=proposal)

    return answer


@pytest.fixture
def two_tools(member):
    """api uses Flask (older) and FastAPI (newer): two values of a many-valued predicate."""
    older = write(member, "api", "core/uses", "Flask", t_valid="2026-01-01T00:00:00")
    newer = write(member, "api", "core/uses", "FastAPI", t_valid="2026-03-01T00:00:00")
    return older, newer


def test_one_value_is_current_and_decided_by_detection(member):
    fact = write(member, "AuthService", "core/has-version", "2.0.0", t_valid="2026-01-01T00:00")
    result = recompute(fact)
    slot = TruthSlot.objects.get()
    assert slot == result.slot
    assert slot.decided_by == "detection"
    assert [(v["object"], v["status"], v["fact_ids"]) for v in slot.values] == [
        ("2.0.0", "current", [str(fact.pk)])
    ]
    assert slot.rationale == "one value, held by 1 claim"
    assert (slot.stale, slot.conflict) == (False, None)
    assert not AuditEntry.objects.filter(rule__startswith="truth:").exists()


def test_a_disputed_value_is_not_current_and_its_conflict_is_linked(member):
    code = write(member, "AuthService", "core/has-version", "2.0.0", t_valid="2026-01-01T00:00")
    note = write(
        member, "AuthService", "core/has-version", "3.0.0", "agent-note", t_valid="2026-02-01T00:00"
    )
    slot = recompute(code).slot
    assert [(v["object"], v["status"]) for v in slot.values] == [
        ("2.0.0", "current"),
        ("3.0.0", "disputed"),
    ]
    assert slot.conflict is not None
    assert set(slot.conflict.facts.values_list("pk", flat=True)) == {code.pk, note.pk}


def test_user_bucket_facts_are_never_part_of_the_shared_answer(member):
    shared = write(member, "api", "core/uses", "Flask", t_valid="2026-01-01T00:00")
    write(member, "api", "core/uses", "Django", t_valid="2026-01-01T00:00", bucket="user")
    slot = recompute(shared).slot
    assert [v["object"] for v in slot.values] == ["Flask"]


def test_values_of_a_many_valued_predicate_coexist(two_tools):
    slot = recompute(two_tools[0]).slot
    assert slot.decided_by == "detection"
    assert {v["object"]: v["status"] for v in slot.values} == {
        "Flask": "current",
        "FastAPI": "current",
    }


@pytest.fixture
def admin_client(client):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


def change_in_admin(admin_client, predicate: Predicate, **changes) -> None:
    fields = {
        "name": predicate.name,
        "cardinality": predicate.cardinality,
        "exclusion_group": predicate.exclusion_group,
        "default_epistemic": predicate.default_epistemic,
        "policy": predicate.policy,
        "description": predicate.description,
        **changes,
    }
    if fields.pop("event_like", predicate.event_like):
        fields["event_like"] = "on"
    url = reverse("admin:memories_predicate_change", args=[predicate.pk])
    response = admin_client.post(url, fields)
    assert response.status_code == 302, response.content.decode()[:2000]


def test_a_slot_goes_stale_after_a_cardinality_change_and_is_recomputed(
    admin_client, two_tools, django_capture_on_commit_callbacks
):
    older, newer = two_tools
    recompute(older)
    uses = Predicate.objects.get(name="core/uses")
    before = TruthSlot.objects.get().vocabulary_version

    with django_capture_on_commit_callbacks(execute=True):
        change_in_admin(admin_client, uses, cardinality="one")
    slot = TruthSlot.objects.get()
    assert slot.stale
    assert slot.stale_reason == "cardinality changed from 'many' to 'one'"
    assert task_statuses() == [("sweep_stale_slots_task", "READY")]

    run_queued_tasks()
    slot.refresh_from_db()
    assert not slot.stale
    assert slot.vocabulary_version != before
    assert slot.decided_by == "policy"
    assert slot.rationale.startswith("predicate policy parallel: 2 competing values kept")

    with django_capture_on_commit_callbacks(execute=True):
        change_in_admin(admin_client, Predicate.objects.get(pk=uses.pk), policy="supersede")
    run_queued_tasks()
    slot.refresh_from_db()
    assert [(v["object"], v["status"]) for v in slot.values] == [
        ("FastAPI", "current"),
        ("Flask", "superseded"),
    ]
    # Acted on: the older value's interval closed where the newer began.
    closed = Fact.objects.get(pk=older.pk)
    assert (closed.t_invalid, closed.superseded_by_id) == (newer.t_valid, newer.pk)


def test_an_edit_that_leaves_the_semantics_alone_marks_nothing_stale(
    admin_client, two_tools, django_capture_on_commit_callbacks
):
    recompute(two_tools[0])
    uses = Predicate.objects.get(name="core/uses")
    with django_capture_on_commit_callbacks(execute=True):
        change_in_admin(admin_client, uses, description="what a component is built with")
    assert not TruthSlot.objects.get().stale
    assert task_statuses() == []


def test_the_sweep_catches_semantics_changed_outside_the_admin(two_tools):
    recompute(two_tools[0])
    make_one_valued("core/uses")
    sweep_stale_slots_task.enqueue()
    run_queued_tasks()
    assert TruthSlot.objects.get().decided_by == "policy"


def test_enqueue_slot_recompute_waits_for_the_commit_and_is_not_duplicated(
    two_tools, django_capture_on_commit_callbacks
):
    older = two_tools[0]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        enqueue_slot_recompute(older.scope_id, older.subject_id, older.predicate_id)
        enqueue_slot_recompute(older.scope_id, older.subject_id, older.predicate_id)
    assert task_statuses() == []
    for callback in callbacks:
        callback()
    assert task_statuses() == [("recompute_slot_task", "READY")]
    run_queued_tasks()
    assert task_statuses() == [("recompute_slot_task", "SUCCESSFUL")]
    assert TruthSlot.objects.get().decided_by == "detection"


def test_competing_values_enqueue_adjudication_instead_of_asking_the_model(two_tools):
    make_one_valued("core/uses")
    fake = FakeAdjudicator(verdict("coexist"))
    result = recompute(two_tools[0], adjudicator=fake)
    assert result.wants_adjudication
    assert fake.requests == []
    assert result.slot.decided_by == "policy"


def test_a_verdict_on_an_unchanged_claim_set_is_committed_and_never_asked_again(two_tools):
    older, newer = two_tools
    make_one_valued("core/uses")
    evaluated = recompute(older).slot.claim_set_hash
    fake = FakeAdjudicator(verdict("single_winner", winner=str(older.pk)))

    result = adjudicate_slot(
        older.scope_id, older.subject_id, older.predicate_id, evaluated, now=NOW, adjudicator=fake
    )
    slot = result.slot
    assert slot.decided_by == "adjudicator"
    assert slot.rationale.startswith("adjudicator verdict single_winner at 0.90: scripted")
    # A single winner is a contradiction: never acted on, left for a human.
    assert [(v["object"], v["status"]) for v in slot.values] == [
        ("FastAPI", "unresolved"),
        ("Flask", "unresolved"),
    ]
    assert slot.conflict is not None
    assert not result.wants_adjudication
    memo = Adjudication.objects.get()
    assert (memo.claim_set_hash, memo.verdict, memo.winner_id) == (
        evaluated,
        "single_winner",
        older.pk,
    )

    adjudicate_slot(
        older.scope_id, older.subject_id, older.predicate_id, evaluated, now=NOW, adjudicator=fake
    )
    recompute(older, adjudicator=fake)
    assert len(fake.requests) == 1
    assert Fact.objects.get(pk=newer.pk).is_live


def test_a_claim_set_that_changes_during_adjudication_is_not_committed(member, two_tools):
    older = two_tools[0]
    make_one_valued("core/uses")
    evaluated = recompute(older).slot.claim_set_hash

    def another_write_lands():
        write(member, "api", "core/uses", "Starlette", t_valid="2026-04-01T00:00:00")

    fake = FakeAdjudicator(
        verdict("single_winner", winner=str(older.pk)), during=another_write_lands
    )
    result = adjudicate_slot(
        older.scope_id, older.subject_id, older.predicate_id, evaluated, now=NOW, adjudicator=fake
    )
    slot = result.slot
    assert slot.claim_set_hash != evaluated
    assert slot.decided_by == "policy"
    assert {v["object"] for v in slot.values if v["status"] == "current"} == {
        "Flask",
        "FastAPI",
        "Starlette",
    }
    # Re-detected: the new set is the one to ask about now.
    assert result.wants_adjudication
    # The verdict stays true of the set it was about, and is kept for it.
    assert Adjudication.objects.get().claim_set_hash == evaluated


def test_no_usable_verdict_leaves_the_policy_deciding_and_says_why(two_tools):
    older = two_tools[0]
    make_one_valued("core/uses")
    evaluated = recompute(older).slot.claim_set_hash
    fake = FakeAdjudicator(Answer(None, problem="no usable verdict: the answer is not JSON"))
    result = adjudicate_slot(
        older.scope_id, older.subject_id, older.predicate_id, evaluated, now=NOW, adjudicator=fake
    )
    assert result.slot.decided_by == "policy"
    assert result.slot.rationale.endswith(
        "(the adjudicator gave no verdict: no usable verdict: the answer is not JSON)"
    )
    assert not result.wants_adjudication
    assert not Adjudication.objects.exists()


def test_a_semantics_proposal_is_recorded_and_never_applied(two_tools):
    older = two_tools[0]
    make_one_valued("core/uses")
    evaluated = recompute(older).slot.claim_set_hash
    proposal = SemanticsProposal(cardinality="many", rationale="a service uses many libraries")
    fake = FakeAdjudicator(verdict("coexist", proposal=proposal))
    adjudicate_slot(
        older.scope_id, older.subject_id, older.predicate_id, evaluated, now=NOW, adjudicator=fake
    )
    recorded = PredicateProposal.objects.get()
    assert (recorded.predicate.name, recorded.cardinality, recorded.status) == (
        "core/uses",
        "many",
        "proposed",
    )
    assert Predicate.objects.get(name="core/uses").cardinality == "one"


def test_values_that_stopped_competing_are_re_detected_without_asking(two_tools):
    older = two_tools[0]
    make_one_valued("core/uses")
    evaluated = recompute(older).slot.claim_set_hash
    Predicate.objects.filter(name="core/uses").update(cardinality="many")
    fake = FakeAdjudicator(verdict("coexist"))
    result = adjudicate_slot(
        older.scope_id, older.subject_id, older.predicate_id, evaluated, now=NOW, adjudicator=fake
    )
    assert fake.requests == []
    assert result.slot.decided_by == "detection"


# --- acting through the one apply -------------------------------------------------------


def truth_audit():
    """(action, target, rule, actor) of every audit entry truth maintenance wrote."""
    return list(
        AuditEntry.objects.filter(rule__startswith="truth:")
        .order_by("id")
        .values_list("action", "target_id", "rule", "actor_id")
    )


def adjudicated(fact, fake):
    """Recompute the slot with ``fake`` configured, then have it adjudicated."""
    evaluated = recompute(fact, adjudicator=fake).slot.claim_set_hash
    return adjudicate_slot(
        fact.scope_id, fact.subject_id, fact.predicate_id, evaluated, now=NOW, adjudicator=fake
    )


def test_a_supersede_policy_slot_supersedes_the_older_value_with_an_audit_entry(two_tools):
    older, newer = two_tools
    make_one_valued("core/uses", "supersede")
    slot = recompute(older).slot
    closed = Fact.objects.get(pk=older.pk)
    assert (closed.t_invalid, closed.superseded_by_id, closed.invalidation_kind) == (
        newer.t_valid,
        newer.pk,
        "superseded",
    )
    assert Fact.objects.get(pk=newer.pk).is_live
    assert truth_audit() == [("superseded", str(older.pk), "truth: policy: supersede", None)]
    entry = AuditEntry.objects.get(rule="truth: policy: supersede")
    assert entry.reason == slot.rationale
    assert slot.rationale.startswith("predicate policy supersede: the newest value")
    # Recomputed again, the slot holds one value and nothing more is done.
    assert recompute(newer).slot.decided_by == "detection"
    assert len(truth_audit()) == 1


def test_a_reverted_truth_supersession_is_not_redone_by_the_next_recompute(two_tools, steward):
    older, newer = two_tools
    make_one_valued("core/uses", "supersede")
    recompute(older)
    entry = AuditEntry.objects.get(rule="truth: policy: supersede")
    revert_automatic_change(actor=steward, entry_id=entry.pk, reason="both tools are in use")
    assert Fact.objects.get(pk=older.pk).is_live and Fact.objects.get(pk=newer.pk).is_live
    # The revert's conflict holds both sides for a steward; maintenance leaves them be.
    recompute(older)
    assert Fact.objects.get(pk=older.pk).is_live
    assert len(truth_audit()) == 1
    assert Conflict.objects.open().get().kind == "reverted"


def test_a_reverted_truth_conflict_is_read_as_a_dismissal_and_not_reopened(two_tools, steward):
    older, _ = two_tools
    make_one_valued("core/uses", "review")
    recompute(older)
    entry = AuditEntry.objects.get(rule="truth: policy: review")
    revert_automatic_change(actor=steward, entry_id=entry.pk, reason="not a real disagreement")
    assert not Conflict.objects.open().exists()
    recompute(older)
    assert not Conflict.objects.open().exists()
    assert len(truth_audit()) == 1


def test_a_review_policy_slot_opens_one_conflict_however_often_it_is_recomputed(two_tools):
    older, newer = two_tools
    make_one_valued("core/uses", "review")
    slot = recompute(older).slot
    conflict = Conflict.objects.get()
    assert slot.conflict == conflict
    assert (conflict.kind, conflict.is_open) == ("contradiction", True)
    # No incoming side: every member is disputed (SPEC §2).
    assert set(conflict.members.values_list("fact_id", "disputes")) == {
        (older.pk, True),
        (newer.pk, True),
    }
    assert truth_audit() == [("opened-conflict", str(conflict.pk), "truth: policy: review", None)]

    again = recompute(older).slot
    assert Conflict.objects.count() == 1
    assert len(truth_audit()) == 1
    assert again.conflict == conflict
    assert Fact.objects.get(pk=older.pk).is_live and Fact.objects.get(pk=newer.pk).is_live


def test_corroboration_merges_the_values_and_closes_nothing(two_tools):
    older, newer = two_tools
    make_one_valued("core/uses")
    slot = adjudicated(older, FakeAdjudicator(verdict("corroborate", confidence=0.95))).slot
    assert [(v["status"], sorted(v["fact_ids"])) for v in slot.values] == [
        ("current", sorted([str(older.pk), str(newer.pk)]))
    ]
    assert Fact.objects.get(pk=older.pk).is_live and Fact.objects.get(pk=newer.pk).is_live
    assert not Conflict.objects.exists()
    assert truth_audit() == []


def test_a_confident_supersede_verdict_is_acted_on(two_tools):
    older, newer = two_tools
    make_one_valued("core/uses")
    adjudicated(older, FakeAdjudicator(verdict("supersede", confidence=0.95)))
    assert Fact.objects.get(pk=older.pk).superseded_by_id == newer.pk
    assert truth_audit() == [("superseded", str(older.pk), "truth: adjudicator: supersede", None)]


@pytest.mark.parametrize(
    ("kind", "confidence", "why"),
    [
        pytest.param("single_winner", 1.0, "a contradiction", id="contradiction-at-1.0"),
        pytest.param("supersede", 0.5, "below 0.9", id="supersede-below-the-bar"),
    ],
)
def test_a_verdict_may_act_refuses_is_not_acted_on_and_left_for_a_human(
    two_tools, kind, confidence, why
):
    older, newer = two_tools
    make_one_valued("core/uses")
    winner = str(older.pk) if kind == "single_winner" else None
    fake = FakeAdjudicator(verdict(kind, winner=winner, confidence=confidence))
    slot = adjudicated(older, fake).slot
    assert Fact.objects.get(pk=older.pk).is_live and Fact.objects.get(pk=newer.pk).is_live
    assert {v["status"] for v in slot.values} == {"unresolved"}
    assert "not acted on: " in slot.rationale and why in slot.rationale
    conflict = Conflict.objects.get()
    assert slot.conflict == conflict
    assert truth_audit() == [
        ("opened-conflict", str(conflict.pk), f"truth: adjudicator: {kind}", None)
    ]


def test_nothing_is_acted_on_while_a_model_is_still_to_be_asked(two_tools):
    older = two_tools[0]
    make_one_valued("core/uses", "supersede")
    result = recompute(older, adjudicator=FakeAdjudicator(verdict("coexist")))
    assert result.wants_adjudication
    assert Fact.objects.get(pk=older.pk).is_live
    assert not Conflict.objects.exists()
    assert {v["status"] for v in result.slot.values} == {"unresolved"}
    assert result.slot.rationale.endswith("nothing acted on until the adjudicator answers")


@pytest.mark.parametrize("resolution", ["coexist", "dismiss"])
def test_a_stewards_ruling_is_never_overridden(two_tools, steward, resolution):
    older, newer = two_tools
    make_one_valued("core/uses", "review")
    conflict = recompute(older).slot.conflict
    resolve_conflict(
        actor=steward, conflict_id=conflict.pk, action=resolution, reason="both stand", now=NOW
    )
    # Then the policy would supersede, and a confident verdict agrees: neither acts.
    make_one_valued("core/uses", "supersede")
    slot = recompute(older).slot
    assert {v["status"] for v in slot.values} == {"current"}
    assert "a steward already ruled" in slot.rationale
    slot = adjudicated(older, FakeAdjudicator(verdict("supersede", confidence=0.99))).slot
    assert {v["status"] for v in slot.values} == {"current"}
    assert Fact.objects.get(pk=older.pk).is_live and Fact.objects.get(pk=newer.pk).is_live
    assert Conflict.objects.count() == 1
    assert [rule for _, _, rule, _ in truth_audit()] == ["truth: policy: review"]
