"""Any interleaving on one one-valued slot keeps every pair of live values linked.

Writes of a few values from a trusted and an untrusted source, a steward's
reverts of whichever automatic change, and passes of truth maintenance, the
crawler and the judge, in any order: after each step, the doctor's
``unlinked-values`` check (two live values of a one-valued slot sharing no
open conflict and no steward's ruling) finds nothing, and no maintainer has
closed a fact at a time before a revert that reopened it.
"""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from memories.maintenance.crawler import run_crawl
from memories.maintenance.judge import run_judge
from memories.maintenance.truth import recompute_slot
from memories.store.errors import StateConflict
from memories.store.models import AuditEntry, Fact
from memories.write.actions import assert_fact
from memories.write.reverts import revert_automatic_change
from tests.adjudicators import ScriptedAdjudicator
from tests.changes_world import backdated_closings, unlinked_values_now

pytestmark = pytest.mark.django_db

SUBJECT = "AuthService"
PREDICATE = "core/has-version"

# Mostly trusted writes, so that values supersede each other and there is much to revert.
writes = st.tuples(
    st.just("write"),
    st.sampled_from(("1", "2", "3", "4")),
    st.sampled_from(("code", "code", "code", "agent-note")),
)
reverts = st.tuples(st.just("revert"), st.integers(min_value=0, max_value=7))
passes = st.sampled_from((("truth",), ("crawl",), ("judge",)))
steps = st.lists(st.one_of(writes, writes, reverts, passes), min_size=1, max_size=14)

ISSUE_27 = [  # 1, 2 (X), 3 (Y); X reverted; then every maintainer
    ("write", "1", "code"),
    ("write", "2", "code"),
    ("write", "3", "code"),
    ("revert", 0),
    ("truth",),
    ("crawl",),
    ("judge",),
]


def revertible() -> list[AuditEntry]:
    """The automatic changes no steward reverted yet, oldest first."""
    reverted = AuditEntry.objects.filter(action="reverted").values("target_id")
    return list(AuditEntry.objects.automatic().exclude(target_id__in=reverted).order_by("at", "id"))


def take(step, *, member, steward, now) -> str:
    kind = step[0]
    if kind == "write":
        _, value, source = step
        data = {
            "scope": "project",
            "subject": SUBJECT,
            "predicate": PREDICATE,
            "object": value,
            "source_type": source,
        }
        return assert_fact(actor=member, data=data, now=now).status
    if kind == "revert":
        changes = revertible()
        if not changes:
            return "nothing to revert"
        change = changes[step[1] % len(changes)]
        try:
            revert_automatic_change(actor=steward, entry_id=change.pk, reason="wrong", now=now)
        except StateConflict:
            return "revert refused"
        return f"reverted {change.action}"
    fact = Fact.objects.filter(subject__name=SUBJECT).first()
    if fact is None:
        return "nothing to maintain"
    if kind == "truth":
        recompute_slot(fact.scope_id, fact.subject_id, fact.predicate_id, now=now)
    elif kind == "crawl":
        run_crawl(full=True)
    else:
        run_judge(resolve=True, adjudicator=ScriptedAdjudicator("supersede", 0.95), now=now)
    return kind


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=steps)
@example(steps=ISSUE_27)
def test_no_interleaving_leaves_two_live_values_of_a_slot_unlinked(member, steward, steps):
    start = timezone.now() - timedelta(days=1)
    with transaction.atomic():
        done = []
        for n, step in enumerate(steps):
            done.append(
                take(step, member=member, steward=steward, now=start + timedelta(minutes=n))
            )
            event(done[-1])
            assert unlinked_values_now() == [], list(zip(steps, done, strict=False))
            assert backdated_closings() == [], list(zip(steps, done, strict=False))
        transaction.set_rollback(True)
