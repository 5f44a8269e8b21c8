"""The entities page: named things in the viewer's scopes, and a steward's merges of them."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.forms import EntityFilterForm, MergeForm, UndoMergeForm
from console.views.common import (
    HtmxHttpRequest,
    add_rejection,
    done,
    page_query,
    paginate,
    refusals,
    steward_scopes,
)
from memories.core.normalize import value_key
from memories.store.errors import Rejected
from memories.store.models import Entity, EntityMerge, Scope
from memories.write.merges import merge_entities, undo_merge

# How many merge records the page lists under "Recent merge records".
HISTORY = 20


def _entities_context(request: HtmxHttpRequest, merge_form: MergeForm | None = None) -> dict:
    form = EntityFilterForm(request.GET or None, user=request.user)
    entities = Entity.objects.filter(scope__in=Scope.objects.visible_to(request.user))
    if form.is_valid():
        if form.cleaned_data["scope"]:
            entities = entities.filter(scope=form.cleaned_data["scope"])
        if form.cleaned_data["q"]:
            key = value_key(form.cleaned_data["q"])
            entities = entities.filter(key__contains=key) | entities.filter(
                alias_keys__contains=[key]
            )
    entities = entities.select_related("scope").order_by("scope__name", "key", "pk")
    visible = EntityMerge.objects.visible_to(request.user).for_display().order_by("-at", "-id")
    stewarded = set(steward_scopes(request.user).values_list("pk", flat=True))
    return {
        "form": form,
        "page": paginate(request, entities, form),
        "query": page_query(request),
        "merges": visible.in_force(),
        "history": visible[:HISTORY],
        "merge_form": merge_form or (MergeForm(user=request.user) if stewarded else None),
        "stewarded_scope_ids": stewarded,
    }


@require_GET
@login_required
def entities(request: HtmxHttpRequest) -> HttpResponse:
    """The viewer's entities, filtered and paged; the merges in force and the latest records."""
    context = _entities_context(request)
    template = "console/entities.html#entity-list" if request.htmx else "console/entities.html"
    return render(request, template, context)


@require_POST
@login_required
@refusals
def merge(request: HtmxHttpRequest) -> HttpResponse:
    """Merge one entity into another of the same scope, found by name or alias."""
    form = MergeForm(request.POST, user=request.user)
    if form.is_valid():
        scope = form.cleaned_data["scope"]
        found = {}
        for name in ("entity", "into"):
            entity = Entity.objects.filter(
                scope=scope, key=value_key(form.cleaned_data[name])
            ).first()
            if entity is None:
                form.add_error(name, f"No entity with that name in {scope.name}.")
            found[name] = entity
        if form.is_valid():
            try:
                merge_entities(
                    actor=request.user,
                    entity_id=found["entity"].pk,
                    into_id=found["into"].pk,
                    reason=form.cleaned_data["reason"],
                )
            except Rejected as error:
                add_rejection(form, error)
            else:
                return done(
                    request,
                    f"Merged {found['entity'].name} into {found['into'].name}.",
                    reverse("entities"),
                )
    return render(request, "console/entities.html", _entities_context(request, form), status=400)


@require_POST
@login_required
@refusals
def unmerge(request: HtmxHttpRequest, merge_id: int) -> HttpResponse:
    """Undo a merge in force, with a reason."""
    form = UndoMergeForm(request.POST)
    if form.is_valid():
        try:
            undo_merge(actor=request.user, merge_id=merge_id, reason=form.cleaned_data["reason"])
        except Rejected as error:
            add_rejection(form, error)
        else:
            return done(request, "The merge was undone.", reverse("entities"))
    messages.error(request, "Undoing a merge needs a reason.")
    return redirect("entities")
