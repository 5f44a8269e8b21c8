"""The "Automatic changes" page: what the system changed on its own, and a steward's revert."""

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.forms import ChangesFilterForm, RevertForm
from console.views.audit import in_words
from console.views.common import (
    HtmxHttpRequest,
    add_rejection,
    done,
    page_query,
    paginate,
    refusals,
    steward_scopes,
)
from memories.core.reverts import DECAY, SUPERSESSION
from memories.store.errors import Rejected, StateConflict
from memories.store.models import AuditEntry, Fact
from memories.write.reverts import revert_automatic_change, why_not_revertible


def _changes_context(
    request: HtmxHttpRequest,
    failed: tuple[int, RevertForm] | None = None,
    refused: str | None = None,
) -> dict[str, Any]:
    form = ChangesFilterForm(request.GET or None, user=request.user)
    rows = AuditEntry.objects.visible_to(request.user).automatic()
    if form.is_valid():
        if form.cleaned_data["scope"]:
            rows = rows.filter(scope=form.cleaned_data["scope"])
        if form.cleaned_data["rule"]:
            rows = rows.filter(rule__startswith=form.cleaned_data["rule"])
    rows = rows.select_related("actor", "scope").with_conflict_names().order_by("-at", "-id")
    page = paginate(request, rows, form)
    reverts = {int(r.target_id): r for r in AuditEntry.objects.reverts_of([e.pk for e in page])}
    stewarded = set(steward_scopes(request.user).values_list("pk", flat=True))
    in_words(request.user, list(page))
    for entry in page:
        entry.revert = reverts.get(entry.pk)
        entry.no_revert = why_not_revertible(entry) if entry.revert is None else None
        entry.may_revert = (
            entry.revert is None and entry.no_revert is None and entry.scope_id in stewarded
        )
        entry.revert_form = failed[1] if failed and failed[0] == entry.pk else None
    return {
        "form": form,
        "page": page,
        "query": page_query(request),
        "refused": (failed[0], refused, failed[1].data.get("reason", ""))
        if failed and refused
        else None,
    }


def _reverted(entry_id: int, record: AuditEntry) -> str:
    """The flash after a revert: what came back, and whether the revert opened a conflict."""
    after = record.after or {}
    said = f"Change {entry_id} was reverted"
    fact = (
        Fact.objects.select_related("subject", "predicate", "object_ref")
        .filter(pk=after.get("fact"))
        .first()
        if after.get("fact")
        else None
    )
    if fact is not None and after.get("kind") == SUPERSESSION:
        said += f": {fact} is back"
    elif fact is not None and after.get("kind") == DECAY:
        said += f": {fact} is no longer marked decayed"
    if after.get("opened_conflict"):
        return (
            f"{said}. It competes with the value standing now, so a conflict is open:"
            " its link is in the change's row."
        )
    return f"{said}."


@require_GET
@login_required
def changes(request: HtmxHttpRequest) -> HttpResponse:
    """Every automatic change in the viewer's scopes, newest first, with a revert for stewards."""
    context = _changes_context(request)
    template = "console/changes.html#change-list" if request.htmx else "console/changes.html"
    return render(request, template, context)


@require_POST
@login_required
@refusals
def revert(request: HtmxHttpRequest, entry_id: int) -> HttpResponse:
    """A steward reverts one automatic change, with a reason."""
    form = RevertForm(request.POST)
    if form.is_valid():
        try:
            record = revert_automatic_change(
                actor=request.user, entry_id=entry_id, reason=form.cleaned_data["reason"]
            )
        except Rejected as error:
            add_rejection(form, error)
        except StateConflict as error:
            # Back to the list, saying why, with the reason as typed.
            form.add_error(None, str(error))
            context = _changes_context(request, failed=(entry_id, form), refused=str(error))
            return render(request, "console/changes.html", context, status=409)
        else:
            return done(request, _reverted(entry_id, record), reverse("changes"))
    context = _changes_context(request, failed=(entry_id, form))
    return render(request, "console/changes.html", context, status=400)
