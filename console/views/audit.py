"""The audit feed: every human action and automatic change in the viewer's scopes."""

import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, time
from itertools import islice
from typing import Any
from uuid import UUID

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.handlers.asgi import ASGIRequest
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from console.audit_words import Readable, describe, mentioned
from console.csv_cells import csv_lines
from console.forms import AuditFilterForm
from console.views.common import HtmxHttpRequest, page_query, paginate
from memories.store.models import AuditEntry, Fact


def _audit_rows(request: HtmxHttpRequest, form: AuditFilterForm) -> QuerySet[AuditEntry]:
    """The entries the viewer may read that match the filters, with actor and scope loaded."""
    rows = AuditEntry.objects.visible_to(request.user)
    if form.is_valid():
        data = form.cleaned_data
        if data["scope"]:
            rows = rows.filter(scope=data["scope"])
        if data["who"] == "human":
            rows = rows.human()
        elif data["who"] == "automatic":
            rows = rows.automatic()
        if data["actor"]:
            rows = rows.filter(actor__username=data["actor"])
        if data["action"]:
            rows = rows.filter(action=data["action"])
        if data["target"]:
            rows = rows.filter(target_id=data["target"])
        if data["since"]:
            rows = rows.filter(at__gte=datetime.combine(data["since"], time.min, tzinfo=UTC))
        if data["until"]:
            rows = rows.filter(at__lte=datetime.combine(data["until"], time.max, tzinfo=UTC))
    return rows.select_related("actor", "scope").with_conflict_names()


NIL = UUID(int=0)


def readable_in(user: User, entries: list[AuditEntry]) -> Readable:
    """The facts and conflicts these entries name that ``user`` may open: one query.

    The entries come from ``AuditEntry.objects.with_conflict_names()`` and
    from scopes ``user`` may read: a conflict is named only as an entry's
    target, in that entry's scope. The nil UUID names no fact; with it the
    facts are read even when no entry names one, so a page makes the same
    queries whatever its entries hold.
    """
    fact_ids: set[str] = set()
    for entry in entries:
        facts, _ = mentioned(entry.before, entry.after, entry.target_type, entry.target_id)
        fact_ids |= facts
    facts = Fact.objects.readable_by(user).named().in_bulk([NIL, *_uuids(fact_ids)])
    return Readable(
        facts={str(pk): (str(fact), reverse("fact", args=[pk])) for pk, fact in facts.items()},
        conflicts={
            entry.target_id: (
                f"the conflict on {entry.conflict_name}",
                reverse("conflict", args=[entry.target_id]),
            )
            for entry in entries
            if getattr(entry, "conflict_name", None)
        },
    )


def in_words(user: User, entries: list[AuditEntry]) -> list[AuditEntry]:
    """``entries``, each with ``described``: its sentence and changes, linked for ``user``.

    The one reading of an entry for a person, shared by the audit feed, the
    automatic-changes page and the dashboard's own recent actions.
    """
    readable = readable_in(user, entries)
    for entry in entries:
        entry.described = describe(
            entry.action,
            entry.target_type,
            entry.target_id,
            entry.before,
            entry.after,
            readable,
            scope=entry.scope.name,
        )
    return entries


def _uuids(texts: set[str]) -> list[UUID]:
    found = []
    for text in texts:
        try:
            found.append(UUID(text))
        except ValueError:
            continue
    return found


@require_GET
@login_required
def audit(request: HtmxHttpRequest) -> HttpResponse:
    """Every human action and automatic change in the viewer's scopes, newest first."""
    form = AuditFilterForm(request.GET or None, user=request.user)
    rows = _audit_rows(request, form).order_by("-at", "-id")
    page = paginate(request, rows, form)
    in_words(request.user, list(page))
    context = {
        "form": form,
        "page": page,
        "query": page_query(request),
        "export_query": page_query(request),
    }
    template = "console/audit.html#audit-list" if request.htmx else "console/audit.html"
    return render(request, template, context)


EXPORT_FIELDS = ["id", "at", "scope", "actor", "action", "target_type", "target_id"]
EXPORT_FIELDS += ["before", "after", "reason", "rule"]


def _export_records(rows: QuerySet[AuditEntry]) -> Iterator[dict[str, Any]]:
    # iterator() streams from a server-side cursor: an export of a million
    # entries never sits in memory at once.
    for entry in rows.order_by("at", "id").iterator(chunk_size=2_000):
        yield {
            "id": entry.id,
            "at": entry.at.isoformat(),
            "scope": entry.scope.name,
            "actor": entry.actor.username if entry.actor else None,
            "action": entry.action,
            "target_type": entry.target_type,
            "target_id": entry.target_id,
            "before": entry.before,
            "after": entry.after,
            "reason": entry.reason,
            "rule": entry.rule,
        }


# Lines read per hop to the request's thread when streaming under ASGI.
EXPORT_BATCH = 500


def _streamed(request: HttpRequest, lines: Iterator[str]) -> Iterator[str] | AsyncIterator[str]:
    """``lines`` as the server streams them: asynchronously under ASGI, as they are under WSGI.

    Under ASGI Django would otherwise read a sync iterator into memory
    first, and warn. The lines come from a server-side cursor, so every
    batch is read on the request's own thread (``thread_sensitive``).
    """
    if not isinstance(request, ASGIRequest):
        return lines
    read = sync_to_async(lambda: list(islice(lines, EXPORT_BATCH)), thread_sensitive=True)

    async def batches() -> AsyncIterator[str]:
        while batch := await read():
            for line in batch:
                yield line

    return batches()


@require_GET
@login_required
def audit_export(request: HtmxHttpRequest, fmt: str) -> StreamingHttpResponse:
    """The filtered feed, oldest first, as CSV or JSON Lines, streamed."""
    form = AuditFilterForm(request.GET or None, user=request.user)
    records = _export_records(_audit_rows(request, form))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    if fmt == "csv":
        rows = (
            [
                json.dumps(record[name]) if name in ("before", "after") else record[name]
                for name in EXPORT_FIELDS
            ]
            for record in records
        )
        response = StreamingHttpResponse(
            _streamed(request, csv_lines(EXPORT_FIELDS, rows)),
            content_type="text/csv; charset=utf-8",
        )
    else:
        response = StreamingHttpResponse(
            _streamed(
                request, (json.dumps(record, ensure_ascii=False) + "\n" for record in records)
            ),
            content_type="application/x-ndjson; charset=utf-8",
        )
    extension = "csv" if fmt == "csv" else "jsonl"
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.{extension}"'
    return response
