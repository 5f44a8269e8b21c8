"""Writing the audit feed (SPEC §12). Called by the actions inside their transaction."""

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User

from memories.store.models import AuditEntry


def record_audit(
    *,
    at: datetime,
    actor: User | None,
    scope_id: int,
    action: str,
    target: Any,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str = "",
    rule: str = "",
) -> AuditEntry:
    """Append one entry. ``actor`` is None for an automatic change, which names its ``rule``."""
    return AuditEntry.objects.create(
        at=at,
        actor=actor if actor is not None and actor.is_authenticated else None,
        scope_id=scope_id,
        action=action,
        target_type=type(target).__name__.lower(),
        target_id=str(target.pk),
        before=before,
        after=after,
        reason=reason,
        rule=rule,
    )


def fact_state(fact) -> dict[str, Any]:
    """The parts of a fact an audit entry shows before and after a change."""
    return {
        "t_invalid": fact.t_invalid.isoformat() if fact.t_invalid else None,
        "invalidation_kind": fact.invalidation_kind,
        "superseded_by": str(fact.superseded_by_id) if fact.superseded_by_id else None,
        "confidence": fact.confidence,
        "source_type": fact.source_type.name,
    }
