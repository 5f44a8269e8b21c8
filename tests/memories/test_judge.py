"""The judge against the real database: verdicts as advice, and the few it may act on."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from memories.maintenance.adjudicator import AdjudicationRequest, Answer
from memories.maintenance.judge import judge_task, run_judge
from memories.store.models import (
    Adjudication,
    AuditEntry,
    Conflict,
    ConflictMember,
    Fact,
    Predicate,
)
from memories.store.vocabulary import forget_vocabulary
from memories.write.actions import assert_fact
from tests.adjudicators import ScriptedAdjudicator
from tests.conftest import at

pytestmark = pytest.mark.django_db

NOW = at("2026-06-01T12:00:00")


def open_conflict(member, kind: str = "contradiction") -> tuple[Conflict, list[Fact]]:
    """Mara works at two places (older, newer), held in one open conflict of ``kind``."""
    Predicate.objects.filter(name="core/works-at").update(policy="parallel", cardinality="many")
    forget_vocabulary()
    facts = [
        assert_fact(
            actor=member,
            data={
                "scope": "project",
                "subject": "Mara",
                "predicate": "core/works-at",
                "object": employer,
                "source_type": "user-assertion",
                "t_valid": f"2026-0{month}-01T00:00:00",
            },
            now=NOW,
        ).fact
        for month, employer in ((1, "Northstar Labs"), (2, "Cedar Works"))
    ]
    Predicate.objects.filter(name="core/works-at").update(cardinality="one")
    forget_vocabulary()
    conflict = Conflict.objects.create(
        scope_id=facts[0].scope_id,
        kind=kind,
        subject_id=facts[0].subject_id,
        predicate_id=facts[0].predicate_id,
        opened_at=NOW,
    )
    for fact in facts:
        ConflictMember.objects.create(
            conflict=conflict, scope_id=conflict.scope_id, fact=fact, role="existing", disputes=True
        )
    return conflict, facts


def live(facts: list[Fact]) -> list[bool]:
    return [Fact.objects.get(pk=fact.pk).t_invalid is None for fact in facts]


def test_a_contradiction_verdict_is_not_acted_on_even_at_full_confidence(member):
    conflict, facts = open_conflict(member)
    [judgement] = run_judge(resolve=True, adjudicator=ScriptedAdjudicator("single_winner", 1.0))
    assert "not acted on" in judgement.outcome
    assert Conflict.objects.get(pk=conflict.pk).is_open
    assert live(facts) == [True, True]


@pytest.mark.parametrize("kind", ["outranked", "commitment", "revenant"])
def test_a_protected_conflict_is_never_resolved_even_on_a_full_supersede(member, kind):
    conflict, facts = open_conflict(member, kind)
    [judgement] = run_judge(resolve=True, adjudicator=ScriptedAdjudicator("supersede", 1.0))
    assert "not acted on" in judgement.outcome
    assert Conflict.objects.get(pk=conflict.pk).is_open
    assert live(facts) == [True, True]


def test_a_confident_corroborate_resolves_as_coexist_with_the_judges_audit_entry(member):
    conflict, facts = open_conflict(member)
    [judgement] = run_judge(resolve=True, adjudicator=ScriptedAdjudicator("corroborate", 0.95))
    assert judgement.outcome == "resolved: coexist"
    conflict.refresh_from_db()
    assert not conflict.is_open and conflict.resolution == "coexist"
    assert conflict.resolved_by is None
    assert live(facts) == [True, True]
    entry = AuditEntry.objects.get(action="resolved-conflict", target_id=str(conflict.pk))
    assert entry.rule == "judge: corroborate" and entry.actor is None
    assert "scripted" in entry.reason


def test_a_confident_supersede_keeps_the_newest_by_valid_time(member):
    conflict, facts = open_conflict(member)
    [judgement] = run_judge(resolve=True, adjudicator=ScriptedAdjudicator("supersede", 0.95))
    assert judgement.outcome == "resolved: keep"
    assert live(facts) == [False, True]
    assert not Conflict.objects.get(pk=conflict.pk).is_open


def test_without_resolve_nothing_changes_but_the_verdict_is_recorded(member):
    conflict, facts = open_conflict(member)
    [judgement] = run_judge(adjudicator=ScriptedAdjudicator("corroborate", 1.0))
    assert judgement.outcome == "advice only"
    assert Conflict.objects.get(pk=conflict.pk).is_open
    assert live(facts) == [True, True]
    assert Adjudication.objects.get().verdict == "corroborate"


def test_a_low_confidence_supersede_is_not_acted_on(member):
    conflict, facts = open_conflict(member)
    [judgement] = run_judge(
        resolve=True, min_confidence=0.9, adjudicator=ScriptedAdjudicator("supersede", 0.5)
    )
    assert "not acted on" in judgement.outcome
    assert Conflict.objects.get(pk=conflict.pk).is_open
    assert live(facts) == [True, True]


def test_a_second_run_does_not_ask_again_about_an_unchanged_claim_set(member):
    open_conflict(member)
    adjudicator = ScriptedAdjudicator("single_winner", 0.6)
    run_judge(adjudicator=adjudicator)
    run_judge(adjudicator=adjudicator)
    assert len(adjudicator.requests) == 1


def test_the_command_prints_a_line_per_conflict(member):
    conflict, _ = open_conflict(member)
    adjudicator = ScriptedAdjudicator("corroborate", 1.0)
    run_judge(adjudicator=adjudicator)  # memoized: the command reads the memo, asks no one
    out = StringIO()
    call_command("judge", stdout=out)
    text = out.getvalue()
    assert f"{conflict.pk} contradiction: corroborate 1.00 — advice only" in text
    assert "1 open conflicts judged." in text


def test_a_conflict_resolved_while_the_adjudicator_thought_is_skipped(member):
    conflict, _ = open_conflict(member)

    class ResolvesMeanwhile(ScriptedAdjudicator):
        def adjudicate(self, request: AdjudicationRequest) -> Answer:
            Conflict.objects.filter(pk=conflict.pk).update(
                resolved_at=NOW, resolution="dismissed", reason="a human was faster"
            )
            return super().adjudicate(request)

    [judgement] = run_judge(resolve=True, adjudicator=ResolvesMeanwhile("corroborate", 1.0))
    assert judgement.outcome == "skipped: resolved meanwhile"
    assert Conflict.objects.get(pk=conflict.pk).resolution == "dismissed"
    assert not AuditEntry.objects.filter(action="resolved-conflict").exists()


def test_the_task_returns_the_judges_lines():
    assert judge_task.call(resolve=False) == []


def test_a_conflict_whose_claim_a_human_ruled_on_since_is_left_for_a_human(member, steward):
    """A steward kept Cedar Works in another conflict after both claims were written."""
    conflict, facts = open_conflict(member)
    ruled = Conflict.objects.create(
        scope_id=conflict.scope_id,
        kind="contradiction",
        subject_id=conflict.subject_id,
        predicate_id=conflict.predicate_id,
        opened_at=NOW,
        resolved_at=NOW + timedelta(hours=1),
        resolved_by=steward,
        resolution="kept",
        reason="checked with Mara",
    )
    ConflictMember.objects.create(
        conflict=ruled, scope_id=ruled.scope_id, fact=facts[1], role="existing", disputes=True
    )
    [judgement] = run_judge(resolve=True, adjudicator=ScriptedAdjudicator("supersede", 0.95))
    assert (
        judgement.outcome == "not acted on (a human ruled on its claims since they were recorded)"
    )
    assert Conflict.objects.get(pk=conflict.pk).is_open
    assert live(facts) == [True, True]


def test_a_live_conflict_across_two_predicates_is_not_called_memberless(member, steward):
    """Issue 30 §11: the commitment conflict's claims are of two predicates, both live."""
    base = {"scope": "project", "subject": "api-layer", "object": "GraphQL"}
    assert_fact(
        actor=steward,
        data={
            **base,
            "predicate": "core/decided-against",
            "source_type": "decision-record",
            "epistemic": "commitment",
            "evidence": [{"ref": "ADR-12", "quote": "We will not adopt GraphQL."}],
        },
        now=NOW - timedelta(days=30),
    )
    assert_fact(
        actor=member, data={**base, "predicate": "core/prefers", "source_type": "session-log"}
    )
    [conflict] = Conflict.objects.open()
    assert conflict.kind == "commitment"
    assert all(m.fact.is_live for m in conflict.members.all())
    [judgement] = run_judge(adjudicator=ScriptedAdjudicator("corroborate", 1.0))
    assert "fewer than two" not in judgement.outcome
    assert judgement.outcome.startswith("not judged: its 2 live members are claims of different")
    assert "core/decided-against, core/prefers" in judgement.outcome
    out = StringIO()
    call_command("judge", stdout=out)
    assert "claims of different predicates" in out.getvalue()
    assert not Adjudication.objects.exists()  # no model was asked
