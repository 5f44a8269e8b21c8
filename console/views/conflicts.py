"""The conflicts queue and the conflict page (SPEC §3, §9).

The page shows the candidates side by side with equal weight: ordered by
recorded time (then id), never by confidence or trust, with no control
pre-selected and nothing marked as recommended. A steward rules with **Keep
this** (per candidate), **Both stand** or **Dismiss**, each in its own form
with its own reason; everyone else sees the same page without the controls,
and a forged POST is refused by ``resolve_conflict`` itself.
"""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from admissions.selectors import fact_statuses
from console import timeline
from console.forms import ConflictFilterForm, ResolveForm
from console.views.common import (
    HtmxHttpRequest,
    add_rejection,
    done,
    page_query,
    paginate,
    refusals,
)
from memories.actions import may_resolve, resolve_conflict
from memories.core.confidence import fact_decays
from memories.errors import Forbidden, Rejected
from memories.lookups import visible_conflict
from memories.models import Bucket, Conflict, ConflictMember, Fact, Predicate, active_claims

SLOT_HISTORY_LIMIT = 60
EARLIER_LIMIT = 20


@require_GET
@login_required
def conflicts(request: HtmxHttpRequest) -> HttpResponse:
    """Open conflicts, oldest first: the queue a steward works through."""
    form = ConflictFilterForm(request.GET or None, user=request.user)
    # Also by the viewer's scopes as a list of ids (a global steward's too):
    # with one, PostgreSQL walks the open-conflict index (scope, opened_at) in
    # the page's order and stops at its end instead of sorting every match.
    listed = Conflict.objects.visible_to(request.user).filter(
        scope_id__in=list(form.visible_scopes())
    )
    state = "open"
    if form.is_valid():
        state = form.cleaned_data["state"] or "open"
        if form.cleaned_data["scope"]:
            listed = listed.in_scope(form.cleaned_data["scope"])
        if form.cleaned_data["kind"]:
            listed = listed.filter(kind=form.cleaned_data["kind"])
    if state == "open":
        listed = listed.open().order_by("opened_at", "id")
    elif state == "resolved":
        listed = listed.resolved().order_by("-resolved_at", "-id")
    else:
        listed = listed.order_by("-opened_at", "-id")
    listed = listed.select_related("scope", "subject", "predicate", "resolved_by")
    context = {
        "form": form,
        "state": state,
        "page": paginate(request, listed.with_candidates().prefetch_related(active_claims()), form),
        "query": page_query(request),
        "now": timezone.now(),
    }
    template = "console/conflicts.html"
    return render(request, f"{template}#conflict-list" if request.htmx else template, context)


def _slot_history(user: User, conflict: Conflict, members: list[ConflictMember]) -> list[Fact]:
    """The slot's facts the viewer may read (the newest ones), oldest first.

    The slot is the conflict's scope and subject, and its predicate or every
    predicate of its exclusion group; only the members' buckets.
    """
    in_slot = Q(predicate_id=conflict.predicate_id)
    if conflict.predicate.exclusion_group:
        group = Predicate.objects.filter(exclusion_group=conflict.predicate.exclusion_group)
        in_slot |= Q(predicate_id__in=group.values("pk"))
    newest = (
        Fact.objects.readable_by(user)
        .filter(
            in_slot,
            scope_id=conflict.scope_id,
            subject_id=conflict.subject_id,
            bucket__in=sorted({member.fact.bucket for member in members}),
        )
        .for_display()
        .select_related("invalidated_by")
        .order_by("-recorded_at", "-id")[:SLOT_HISTORY_LIMIT]
    )
    return list(reversed(newest))


def _timeline(
    conflict: Conflict, history: list[Fact], in_conflict: set, disputed: set, now
) -> timeline.Timeline:
    spans = [
        timeline.Span(
            fact_id=str(fact.pk),
            value=f"{fact.predicate.name} {fact.object_display}"
            if conflict.predicate.exclusion_group
            else fact.object_display,
            start=fact.t_valid,
            end=fact.t_invalid,
            ended_as=fact.invalidation_kind if fact.t_invalid else "",
            superseded_by=str(fact.superseded_by_id) if fact.superseded_by_id else None,
            in_conflict=fact.pk in in_conflict,
            disputed=fact.pk in disputed,
            recorded_at=fact.recorded_at,
            confidence=fact.confidence,
            last_reinforced_at=fact.last_reinforced_at,
            decays=fact_decays(fact.epistemic, fact.source_type.decays),
        )
        for fact in history
    ]
    return timeline.layout(
        spans,
        now=now,
        conflict_opened_at=conflict.opened_at if conflict.is_open else None,
        half_life_days=settings.CLAIMGRAPH_HALF_LIFE_DAYS,
        floor=settings.CLAIMGRAPH_CONFIDENCE_FLOOR,
    )


def _conflict_context(
    request: HtmxHttpRequest, conflict: Conflict, forms: dict | None = None
) -> dict:
    now = timezone.now()
    members = list(conflict.members.candidates())
    facts = [member.fact for member in members]
    history = _slot_history(request.user, conflict, members)
    statuses = fact_statuses(facts)
    disputed = {member.fact_id for member in members if member.disputes and conflict.is_open}
    candidates = [
        {
            "member": member,
            "fact": member.fact,
            "effective": member.fact.effective_confidence(now),
            "status": statuses.get(member.fact.pk),
            "keep_form": (forms or {}).get(("keep", member.fact_id))
            or ResolveForm(
                initial={"action": "keep", "keep": member.fact_id},
                auto_id=f"id_keep_{member.fact_id.hex[:8]}_%s",
            ),
        }
        for member in members
    ]
    earlier = Conflict.objects.on_slot_of(conflict).order_by("-opened_at")[:EARLIER_LIMIT]
    return {
        "conflict": conflict,
        "candidates": candidates,
        "history": history,
        "earlier": earlier,
        "timeline": _timeline(
            conflict, history, {member.fact_id for member in members}, disputed, now
        ),
        "now": now,
        "may_resolve": conflict.is_open and may_resolve(request.user, conflict),
        "coexist_form": (forms or {}).get(("coexist", None))
        or ResolveForm(initial={"action": "coexist"}, auto_id="id_coexist_%s"),
        "dismiss_form": (forms or {}).get(("dismiss", None))
        or ResolveForm(initial={"action": "dismiss"}, auto_id="id_dismiss_%s"),
        "user_bucket": any(member.fact.bucket == Bucket.USER for member in members),
    }


@require_GET
@login_required
@refusals
def conflict(request: HtmxHttpRequest, conflict_id) -> HttpResponse:
    found = visible_conflict(request.user, conflict_id)
    return render(request, "console/conflict.html", _conflict_context(request, found))


@require_POST
@login_required
@refusals
def resolve(request: HtmxHttpRequest, conflict_id) -> HttpResponse:
    """A ruling by form POST; refused server-side for anyone who may not rule."""
    found = visible_conflict(request.user, conflict_id)
    form = ResolveForm(request.POST)
    if form.is_valid():
        action = form.cleaned_data["action"]
        keep = [form.cleaned_data["keep"]] if action == "keep" else []
        try:
            resolve_conflict(
                actor=request.user,
                conflict_id=found.pk,
                action=action,
                reason=form.cleaned_data["reason"],
                keep=keep,
            )
        except Rejected as error:
            add_rejection(form, error)
        else:
            said = {"keep": "kept one candidate", "coexist": "both stand", "dismiss": "dismissed"}
            return done(
                request,
                f"Conflict on {found.subject.name} {found.predicate.name} resolved: "
                f"{said[action]}.",
                reverse("conflicts"),
            )
    # Refused input: the page again, with the error beside the form that sent it.
    if not may_resolve(request.user, found):
        # Bad input from someone who may not rule at all: the refusal comes first.
        raise Forbidden("only a steward of the scope may resolve this conflict")
    action = request.POST.get("action")
    key = ("keep", form.cleaned_data.get("keep")) if action == "keep" else (action, None)
    context = _conflict_context(request, found, {key: form})
    return render(request, "console/conflict.html", context, status=400)
