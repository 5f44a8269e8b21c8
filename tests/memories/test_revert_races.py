"""A steward's revert racing writers and truth maintenance on one slot, with real threads.

Each thread has its own PostgreSQL session. The revert takes the slot's lock,
as every writer and truth maintenance do, so whatever order the lock hands
out, the revert weighs the live values that are there when it runs.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.maintenance.truth import recompute_slot
from memories.store.errors import StateConflict
from memories.store.models import AuditEntry, Fact
from memories.write.actions import assert_fact
from memories.write.reverts import revert_automatic_change
from tests.changes_world import (
    backdated_closings,
    maintain,
    maintenance_closings,
    one_two_three,
    unlinked_values_now,
)
from tests.racing import race

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

ROUNDS = 6
# A steward reverting X, an agent re-asserting 1, another 3, a low-trust one
# writing 4, and truth maintenance recomputing the slot, all at one instant.
ACTORS = ("steward", "1@code", "3@code", "4@agent-note", "truth")


def race_a_revert(member, steward, subject: str) -> dict[str, str]:
    """1, 2 (X), 3 on ``subject``; then ACTORS at once. Each actor's answer, and the facts."""
    (one, _, _), x, _ = one_two_three(member, subject=subject)

    def act(actor: str) -> str:
        if actor == "steward":
            try:
                revert_automatic_change(actor=steward, entry_id=x.pk, reason="2 was wrong")
            except StateConflict as refusal:
                return f"refused: {refusal}"
            return "reverted"
        if actor == "truth":
            recompute_slot(one.scope_id, one.subject_id, one.predicate_id)
            return "recomputed"
        value, source = actor.split("@")
        data = {
            "scope": "project",
            "subject": subject,
            "predicate": "core/has-version",
            "object": value,
            "source_type": source,
        }
        return assert_fact(actor=member, data=data).status

    answers = dict(zip(ACTORS, race(act, ACTORS), strict=True))
    answers["x"], answers["one"] = str(x.pk), str(one.pk)
    return answers


def test_a_revert_racing_writes_and_maintenance_never_leaves_values_unlinked(member, steward):
    for round_ in range(ROUNDS):
        answers = race_a_revert(member, steward, f"AuthService-{round_}")
        assert unlinked_values_now() == [], (round_, answers)

        one = Fact.objects.get(pk=answers["one"])
        maintain(one, now=timezone.now() + timedelta(seconds=1))
        assert unlinked_values_now() == [], (round_, answers)
        assert backdated_closings() == [], (round_, answers)
        # Re-asserting 1 is answered "reinforced" only once the revert has reopened
        # it; the agent told so does not find it closed behind its back.
        if answers["1@code"] == "reinforced":
            assert answers["steward"] == "reverted", (round_, answers)
            reverted_at = AuditEntry.objects.get(action="reverted", target_id=answers["x"]).at
            closed = {fact_id for fact_id, _, at in maintenance_closings() if at >= reverted_at}
            assert answers["one"] not in closed, (round_, answers)
            assert Fact.objects.get(pk=one.pk).is_live, (round_, answers)
