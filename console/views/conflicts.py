"""The conflicts queue and the conflict page (SPEC §3, §9).

The page shows the candidates side by side with equal weight: ordered by
recorded time (then id), never by confidence or trust, with no control
pre-selected and nothing marked as recommended. A steward rules with **Keep
this** (per candidate), **Both stand** or **Dismiss**, each in its own form
with its own reason; everyone else sees the same page without the controls,
and a forged POST is refused by ``resolve_conflict`` itself.
"""

from datetime import datetime
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.http import HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from admissions.selectors import fact_statuses
from console import slot_pictures, timeline
from console.conflict_words import EXCLUSION_GROUP_EXPLANATION
from console.forms import ConflictFilterForm, ResolveForm
from console.truth_panels import slot_panels
from console.views.common import (
    HtmxHttpRequest,
    add_rejection,
    page_query,
    paginate,
    refusals,
)
from memories.maintenance.judge import advice_on, ask_adjudicator
from memories.store.errors import Forbidden, Rejected
from memories.store.lookups import visible_conflict
from memories.store.models import (
    Bucket,
    Conflict,
    ConflictMember,
    Fact,
    Predicate,
    TruthSlot,
    active_claims,
)
from memories.store.permissions import may_resolve
from memories.write.actions import resolve_conflict

SLOT_HISTORY_LIMIT = 60
EARLIER_LIMIT = 20
# A queue's filters fit in far less; anything longer is not a link we made.
MAX_QUEUE_QUERY = 2000


def _queue(user: User, query: QueryDict) -> tuple[ConflictFilterForm, str, QuerySet[Conflict]]:
    """The conflicts queue for ``query`` (its filters), in the queue's order.

    The one home of the queue's filters and order: the queue page lists it,
    and a ruling moves on to its next item (``_after_ruling``).
    """
    form = ConflictFilterForm(query or None, user=user)
    # Also by the viewer's scopes as a list of ids (a global steward's too):
    # with one, PostgreSQL walks the open-conflict index (scope, opened_at) in
    # the page's order and stops at its end instead of sorting every match.
    listed = Conflict.objects.visible_to(user).filter(scope_id__in=list(form.visible_scopes()))
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
    return form, state, listed


def _queue_query(raw: str) -> str:
    """A queue's query string as links carry it: re-encoded, without the page number."""
    query = QueryDict(raw[:MAX_QUEUE_QUERY], mutable=True)
    query.pop("page", None)
    return query.urlencode()


@require_GET
@login_required
def conflicts(request: HtmxHttpRequest) -> HttpResponse:
    """Open conflicts, oldest first: the queue a steward works through."""
    form, state, listed = _queue(request.user, request.GET)
    listed = listed.select_related("scope", "subject", "predicate", "resolved_by")
    context = {
        "form": form,
        "state": state,
        "page": paginate(
            request,
            listed.with_candidates().prefetch_related(
                active_claims(scope_ids=form.visible_scopes())
            ),
            form,
        ),
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
    drawn = slot_pictures.spans(
        history,
        across_group=bool(conflict.predicate.exclusion_group),
        in_conflict=in_conflict,
        disputed=disputed,
    )
    opened = conflict.opened_at if conflict.is_open else None
    return slot_pictures.draw(drawn, now=now, conflict_opened_at=opened)


# What each row of the comparison compares: two candidates differ on a row when
# these keys differ. The template spells out each row; this says only which differ.
COMPARED = {
    "object": lambda c: (c["fact"].object_kind, c["fact"].object_display),
    "predicate": lambda c: c["fact"].predicate.name,
    "source": lambda c: (c["fact"].source_type.name, c["fact"].source_type.trust_rank),
    "epistemic": lambda c: c["fact"].epistemic,
    "confidence": lambda c: round(c["fact"].confidence, 2),
    "effective": lambda c: round(c["effective"], 2),
    "valid_from": lambda c: _minute(c["fact"].t_valid),
    "valid_to": lambda c: _minute(c["fact"].t_invalid),
    "recorded": lambda c: _minute(c["fact"].recorded_at),
    "reinforced": lambda c: _minute(c["fact"].last_reinforced_at),
    "author": lambda c: c["fact"].author_id,
    "episode": lambda c: c["fact"].episode,
    "statement": lambda c: c["fact"].statement,
    "evidence": lambda c: tuple((e.get("ref"), e.get("quote")) for e in c["fact"].evidence),
    "admission": lambda c: c["status"].status if c["status"] else None,
    "role": lambda c: c["member"].role,
}


# The comparison table's rows, in order: (field, label). Each field is one of COMPARED.
ROWS = (
    ("object", "Object"),
    ("predicate", "Predicate"),
    ("source", "Source (trust)"),
    ("epistemic", "Epistemic class"),
    ("confidence", "Confidence"),
    ("effective", "Effective confidence now"),
    ("valid_from", "Valid from"),
    ("valid_to", "Valid to"),
    ("recorded", "Recorded"),
    ("reinforced", "Last reinforced"),
    ("author", "Author"),
    ("episode", "Episode"),
    ("statement", "Statement"),
    ("evidence", "Evidence"),
    ("admission", "Admission status"),
    ("role", "In this conflict"),
)


def _minute(moment: datetime | None) -> datetime | None:
    """To the minute, as the table shows times."""
    return moment and moment.replace(second=0, microsecond=0)


def differing(candidates: list[dict]) -> frozenset[str]:
    """The compared fields (``COMPARED``) on which not every candidate agrees."""
    return frozenset(
        name for name, key in COMPARED.items() if len({key(c) for c in candidates}) > 1
    )


def _conflict_context(
    request: HtmxHttpRequest, conflict: Conflict, forms: dict | None = None, *, queue: str = ""
) -> dict:
    now = timezone.now()
    members = list(conflict.members.candidates())
    facts = [member.fact for member in members]
    history = _slot_history(request.user, conflict, members)
    statuses = fact_statuses(facts)
    # A rejected member of an open conflict is no longer a side of it
    # (docs/admissions.md): it is shown as rejected, neither disputed nor
    # offered to keep. (Its rejection closed the conflict unless two sides remain.)
    out = {
        fact.pk
        for fact in facts
        if conflict.is_open
        and statuses.get(fact.pk) is not None
        and statuses[fact.pk].status == "rejected"
    }
    disputed = {
        member.fact_id
        for member in members
        if member.disputes and conflict.is_open and member.fact_id not in out
    }
    candidates = [
        {
            "member": member,
            "fact": member.fact,
            "out": member.fact_id in out,
            "disputed": member.fact_id in disputed,
            "effective": member.fact.effective_confidence(now),
            "status": statuses.get(member.fact.pk),
            "keep_form": (forms or {}).get(("keep", member.fact_id))
            or ResolveForm(
                initial={"action": "keep", "keep": member.fact_id, "queue": queue},
                auto_id=f"id_keep_{member.fact_id.hex[:8]}_%s",
            ),
        }
        for member in members
    ]
    predicates = sorted({fact.predicate.name for fact in facts})
    differs = differing(candidates)
    earlier = Conflict.objects.on_slot_of(conflict).order_by("-opened_at")[:EARLIER_LIMIT]
    slots = TruthSlot.objects.filter(
        scope_id=conflict.scope_id,
        subject_id=conflict.subject_id,
        predicate_id__in={fact.predicate_id for fact in facts},
    ).select_related("predicate", "conflict")
    allowed = conflict.is_open and may_resolve(request.user, conflict)
    return {
        "conflict": conflict,
        "candidates": candidates,
        "rows": [
            {"field": field, "label": label, "differs": field in differs} for field, label in ROWS
        ],
        "across_predicates": len(predicates) > 1,
        "group_note": EXCLUSION_GROUP_EXPLANATION.format(predicates=" and ".join(predicates))
        if len(predicates) > 1
        else "",
        "history": history,
        "earlier": earlier,
        "slots": slot_panels(slots.order_by("predicate__name")),
        "timeline": _timeline(
            conflict, history, {member.fact_id for member in members}, disputed, now
        ),
        "now": now,
        "queue": queue,
        "may_resolve": allowed,
        "advice": advice_on(conflict, now=now) if allowed and request.GET.get("advice") else None,
        "coexist_form": (forms or {}).get(("coexist", None))
        or ResolveForm(initial={"action": "coexist", "queue": queue}, auto_id="id_coexist_%s"),
        "dismiss_form": (forms or {}).get(("dismiss", None))
        or ResolveForm(initial={"action": "dismiss", "queue": queue}, auto_id="id_dismiss_%s"),
        "user_bucket": any(member.fact.bucket == Bucket.USER for member in members),
    }


@require_GET
@login_required
@refusals
def conflict(request: HtmxHttpRequest, conflict_id) -> HttpResponse:
    found = visible_conflict(request.user, conflict_id)
    context = _conflict_context(request, found, queue=_queue_query(request.GET.get("queue", "")))
    return render(request, "console/conflict.html", context)


def _after_ruling(request: HtmxHttpRequest, ruled: Conflict, queue: str) -> str:
    """Where a steward goes after ruling on ``ruled``: the next item of the queue they came from.

    The queue is the one its filters (``queue``) select, in its order; its
    first item other than ``ruled``, keeping the filters; or, when none is
    left, the queue itself, saying it is empty.
    """
    _, _, listed = _queue(request.user, QueryDict(queue))
    following = listed.exclude(pk=ruled.pk).values_list("pk", flat=True).first()
    if following is not None:
        to = reverse("conflict", args=[following])
        return f"{to}?{urlencode({'queue': queue})}" if queue else to
    messages.info(request, "Queue empty: no other conflict matches these filters.")
    return f"{reverse('conflicts')}?{queue}" if queue else reverse("conflicts")


def _moved_on(request: HtmxHttpRequest, to: str) -> HttpResponse:
    """A redirect after a successful action: htmx follows it in the browser, a form by 303."""
    if request.htmx:
        return HttpResponseClientRedirect(to)
    return HttpResponseRedirect(to, status=303)


@require_POST
@login_required
@refusals
def resolve(request: HtmxHttpRequest, conflict_id) -> HttpResponse:
    """A ruling by form POST; refused server-side for anyone who may not rule.

    After it, the steward lands on the next conflict of the queue they came
    from (the ``queue`` field: that queue's filters), or on the queue.
    """
    found = visible_conflict(request.user, conflict_id)
    form = ResolveForm(request.POST)
    queue = _queue_query(request.POST.get("queue", ""))
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
            messages.success(
                request,
                f"Conflict on {found.subject.name} {found.predicate.name} resolved: "
                f"{said[action]}.",
            )
            return _moved_on(request, _after_ruling(request, found, queue))
    # Refused input: the page again, with the error beside the form that sent it.
    if not may_resolve(request.user, found):
        # Bad input from someone who may not rule at all: the refusal comes first.
        raise Forbidden("only a steward of the scope may resolve this conflict")
    action = request.POST.get("action")
    key = ("keep", form.cleaned_data.get("keep")) if action == "keep" else (action, None)
    context = _conflict_context(request, found, {key: form}, queue=queue)
    template = "console/conflict.html"
    return render(request, f"{template}#rulings" if request.htmx else template, context, status=400)


@require_POST
@login_required
@refusals
def advise(request: HtmxHttpRequest, conflict_id) -> HttpResponse:
    """A steward asks the adjudicator about this conflict; the advice is shown, nothing decided."""
    advice = ask_adjudicator(actor=request.user, conflict_id=conflict_id)
    found = visible_conflict(request.user, conflict_id)
    queue = _queue_query(request.POST.get("queue", ""))
    if request.htmx:
        context = {"conflict": found, "advice": advice, "may_resolve": True, "queue": queue}
        return render(request, "console/conflict.html#advice-panel", context)
    if advice.source == "policy" and advice.problem:
        messages.info(request, f"No verdict from the adjudicator: {advice.problem}.")
    query = urlencode({"advice": "1", **({"queue": queue} if queue else {})})
    return HttpResponseRedirect(
        f"{reverse('conflict', args=[found.pk])}?{query}#advice-panel", status=303
    )
