"""Automatic changes (SPEC §12): what the system changed on its own, and a steward's revert.

``GET /changes`` lists, newest first, every automatic change
(``AuditEntry.objects.automatic()``) in the scopes the caller may read, each
with its rule, the account whose write triggered it, its rationale and
whether a steward reverted it. ``POST /changes/{id}/revert`` is the
steward's revert (``memories.write.reverts``).
"""

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpRequest
from ninja import Query, Router

from api.memory import caller, decode_cursor, encode_cursor, readable_scope
from api.schemas import (
    READ_ERRORS,
    WRITE_ERRORS,
    ChangeOut,
    ChangePage,
    ChangesQuery,
    RevertIn,
)
from memories.store.errors import Rejected
from memories.store.models import AuditEntry
from memories.write.reverts import revert_automatic_change, visible_change

router = Router(tags=["changes"])

_LISTING = "changes"
_NOT_OURS = "is not a cursor of this list: hand back the `next` of its page before"


@router.get("/changes", response={200: ChangePage, **READ_ERRORS})
def get_changes(request: HttpRequest, query: Query[ChangesQuery]):
    """Automatic changes the caller may read, newest first."""
    ChangesQuery.refuse_unknown(request)
    actor = caller(request)
    rows = AuditEntry.objects.visible_to(actor).automatic().select_related("actor", "scope")
    if query.scope is not None:
        rows = rows.filter(scope=readable_scope(actor, query.scope))
    if query.rule:
        rows = rows.filter(rule__startswith=query.rule)
    batch, cursor = _newest_first(rows, query)
    return {"results": present_changes(batch), "next": cursor}


@router.post("/changes/{entry_id}/revert", response={200: ChangeOut, **WRITE_ERRORS})
def post_revert(request: HttpRequest, entry_id: str, payload: RevertIn):
    """Revert one automatic change (a steward of its scope), with a reason; itself a record."""
    actor = caller(request)
    revert_automatic_change(actor=actor, entry_id=entry_id, reason=payload.reason)
    return present_changes([visible_change(actor, entry_id)])[0]


def _newest_first(rows: QuerySet[AuditEntry], query: ChangesQuery) -> tuple[list, str | None]:
    """One page of ``rows``, newest first (time, then id), after the signed cursor."""
    position = decode_cursor(query.cursor, listing=_LISTING)
    if position is not None:
        try:
            before_at, before_id = datetime.fromisoformat(position[0]), int(position[1])
        except (IndexError, TypeError, ValueError):
            raise Rejected("cursor", _NOT_OURS) from None
        rows = rows.filter(Q(at__lt=before_at) | Q(at=before_at, id__lt=before_id))
    batch = list(rows.order_by("-at", "-id")[: query.limit + 1])
    if len(batch) <= query.limit:
        return batch, None
    batch = batch[: query.limit]
    last = batch[-1]
    return batch, encode_cursor([last.at.isoformat(), last.pk], listing=_LISTING)


def present_changes(entries: Sequence[AuditEntry]) -> list[dict[str, Any]]:
    """The Change shape of each entry; their reverts read in one query for the lot."""
    reverts = {
        int(revert.target_id): revert
        for revert in AuditEntry.objects.reverts_of([entry.pk for entry in entries])
    }
    return [
        {
            "id": entry.pk,
            "at": entry.at,
            "scope": entry.scope.name,
            "rule": entry.rule,
            "action": entry.action,
            "target_type": entry.target_type,
            "target_id": entry.target_id,
            "triggered_by": entry.actor.get_username() if entry.actor else None,
            "before": entry.before,
            "after": entry.after,
            "rationale": entry.reason,
            "reverted": _reverted(reverts.get(entry.pk)),
        }
        for entry in entries
    ]


def _reverted(revert: AuditEntry | None) -> dict[str, Any] | None:
    if revert is None:
        return None
    return {
        "revert": revert.pk,
        "by": revert.actor.get_username() if revert.actor else "",
        "at": revert.at,
        "reason": revert.reason,
    }
