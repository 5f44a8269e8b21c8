"""The dashboard, the candidates queue with batch review, and the challenges list."""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import Count, Min, QuerySet
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from admissions.actions import record_verdict
from admissions.models import ChallengeRank, Record, Role
from admissions.selectors import candidates, challenge_summary, fact_status, in_effect
from console.admission_forms import BatchReviewForm, CandidateFilterForm, ChallengeFilterForm
from console.views.common import HtmxHttpRequest, page_query, paginate, refusals, steward_scopes
from memories.errors import Forbidden, Rejected, StateConflict
from memories.models import Bucket, Conflict, Fact, Scope
from memories.roles import is_global_steward, steward_scope_ids

# --- dashboard ------------------------------------------------------------------------


@dataclass(frozen=True)
class Queue:
    """One count on the dashboard, with the link to its queue and its oldest item's time."""

    label: str
    figures: dict
    url: str
    verb: str

    @property
    def count(self) -> int:
        return self.figures["count"]

    @property
    def oldest(self) -> datetime | None:
        return self.figures["oldest"]


@require_GET
@login_required
def dashboard(request: HtmxHttpRequest) -> HttpResponse:
    """What waits for a human, in the viewer's scopes, and how long the oldest has waited."""
    scopes = Scope.objects.visible_to(request.user)
    conflicts = (
        Conflict.objects.open()
        .filter(scope__in=scopes)
        .aggregate(count=Count("pk"), oldest=Min("opened_at"))
    )
    awaiting = (
        candidates(scopes.values("pk"))
        .order_by()
        .aggregate(count=Count("pk"), oldest=Min("recorded_at"))
    )
    challenges = (
        Record.objects.open()
        .filter(scope__in=scopes)
        .aggregate(count=Count("pk"), oldest=Min("inserted_at"))
    )
    # A suspended fact waits since the challenge that suspends it was filed.
    suspended = in_effect(
        ChallengeRank.objects.filter(scope__in=scopes, fact__t_invalid__isnull=True)
    ).aggregate(count=Count("fact", distinct=True), oldest=Min("inserted_at"))
    is_steward = steward_scopes(request.user).exists()
    queues = [
        Queue("Open conflicts", conflicts, reverse("conflicts"), "opened"),
        Queue(
            "Candidates awaiting a verdict",
            awaiting,
            reverse("candidates") if is_steward else reverse("facts") + "?status=candidate",
            "recorded",
        ),
        Queue("Open challenges", challenges, reverse("challenges"), "filed"),
        Queue("Suspended facts", suspended, reverse("facts") + "?status=suspended", "suspended"),
    ]
    context = {"queues": queues, "now": timezone.now(), "scopes": scopes}
    return render(request, "console/dashboard.html", context)


# --- candidates -------------------------------------------------------------------------


def _stewarded(user: User, scopes: dict[int, Scope]) -> list[int]:
    """The ids among the viewer's ``scopes`` in which ``user`` is a steward."""
    if is_global_steward(user):
        return list(scopes)
    # A scope steward's scopes are among the scopes they read.
    ids = set(steward_scope_ids(user))
    return [pk for pk in scopes if pk in ids]


def _candidates(form: CandidateFilterForm, scope_ids: list[int]) -> QuerySet[Fact]:
    filters = {}
    if form.is_valid():
        chosen = form.cleaned_data
        filters = {
            "scope": chosen["scope"].name if chosen["scope"] else "",
            "source_type": chosen["source"].name if chosen["source"] else "",
            "predicate": chosen["predicate"].name if chosen["predicate"] else "",
        }
    # A list of ids, not a subquery, lets PostgreSQL read a single scope's
    # candidates in recorded order from its index and stop at the page's end.
    return candidates(scope_ids, filters)


@dataclass(frozen=True)
class ReviewItem:
    """One item of a batch review: applied, or refused and why."""

    fact_id: str
    label: str
    applied: bool
    why: str = ""


def _is_uuid(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True


def _review(request: HtmxHttpRequest, form: BatchReviewForm) -> list[ReviewItem]:
    """Apply one verdict with one ground to each selected candidate, each on its own."""
    verdict = form.cleaned_data["verdict"]
    selected = form.cleaned_data["facts"]
    readable = (
        Fact.objects.readable_by(request.user)
        .for_display()
        .in_bulk([fact_id for fact_id in selected if _is_uuid(fact_id)])
    )
    outcomes = []
    for fact_id in selected:
        found = readable.get(UUID(fact_id)) if _is_uuid(fact_id) else None
        if found is None:
            outcomes.append(ReviewItem(fact_id, fact_id, False, "not found"))
            continue
        label = str(found)
        # A queue is a snapshot: another steward may have ruled since it was
        # loaded, and a batch must not silently overturn that verdict.
        current = fact_status(found).status if found.bucket == Bucket.SYSTEM else None
        if current != "candidate":
            why = f"no longer a candidate (now {current})" if current else "not a system fact"
            outcomes.append(ReviewItem(fact_id, label, False, why))
            continue
        try:
            record_verdict(
                actor=request.user,
                fact_id=found.pk,
                verdict=verdict,
                ground=form.cleaned_data["ground"],
            )
        except (Forbidden, StateConflict) as error:
            outcomes.append(ReviewItem(fact_id, label, False, str(error)))
        except Rejected as error:
            outcomes.append(ReviewItem(fact_id, label, False, error.message))
        else:
            outcomes.append(ReviewItem(fact_id, label, True, verdict))
    return outcomes


def _review_summary(verdict: str, outcomes: list[ReviewItem]) -> str:
    """What a batch review did, in words for the status region."""
    word = "Admitted" if verdict == "admitted" else "Rejected"
    done = sum(1 for o in outcomes if o.applied)
    refused = len(outcomes) - done
    summary = f"{word} {done} of {len(outcomes)} selected candidates"
    return f"{summary}; {refused} not reviewed, see why below." if refused else f"{summary}."


@require_http_methods(["GET", "POST"])
@login_required
@refusals
def candidates_queue(request: HtmxHttpRequest) -> HttpResponse:
    """System facts without a verdict, oldest first; several can be reviewed at once."""
    filters = CandidateFilterForm(request.GET or None, user=request.user)
    # The filter's scopes also say where the viewer is a steward: one query for both.
    scopes = filters.visible_scopes()
    stewarded = _stewarded(request.user, scopes)
    if not stewarded:
        raise Forbidden("only stewards review candidates")
    outcomes = None
    status = 200
    batch = BatchReviewForm()
    if request.method == "POST":
        batch = BatchReviewForm(request.POST)
        if batch.is_valid():
            outcomes = _review(request, batch)
            messages.success(request, _review_summary(batch.cleaned_data["verdict"], outcomes))
            batch = BatchReviewForm()
        else:
            status = 400
    page = paginate(request, _candidates(filters, stewarded), filters)
    context = {
        "form": filters,
        "batch": batch,
        "outcomes": outcomes,
        "applied": [o for o in outcomes or [] if o.applied],
        "refused": [o for o in outcomes or [] if not o.applied],
        "page": page,
        "query": page_query(request),
        "now": timezone.now(),
    }
    template = "console/candidates.html"
    partial = request.htmx and not request.htmx.boosted
    return render(
        request, f"{template}#candidate-list" if partial else template, context, status=status
    )


# --- challenges -------------------------------------------------------------------------


@require_GET
@login_required
def challenges(request: HtmxHttpRequest) -> HttpResponse:
    """Challenges, open and resolved, with each account's flood cap in effect (SPEC §6)."""
    form = ChallengeFilterForm(request.GET or None, user=request.user)
    scopes = Scope.objects.visible_to(request.user)
    state = (form.cleaned_data["state"] if form.is_valid() else "") or "open"
    listed = {"open": Record.objects.open, "resolved": Record.objects.resolved}
    rows = listed.get(state, Record.objects.challenges)().filter(scope__in=scopes)
    if form.is_valid():
        if form.cleaned_data["scope"]:
            rows = rows.filter(scope=form.cleaned_data["scope"])
        if form.cleaned_data["author"]:
            rows = rows.filter(author__username=form.cleaned_data["author"])
    rows = (
        rows.select_related(
            "scope", "author", "fact__subject", "fact__predicate", "fact__object_ref"
        )
        .with_refuted()
        .order_by("inserted_at", "id")
    )
    page = paginate(request, rows, form)

    # The cap per account: one summary per scope on this page, not one per row.
    page_scopes = {record.scope for record in page}
    summaries = {scope.pk: challenge_summary(scope) for scope in page_scopes}
    suspending: set[UUID] = set()
    queued: set[UUID] = set()
    accounts = []
    for scope in sorted(page_scopes, key=lambda s: s.name):
        for usage in summaries[scope.pk]:
            suspending.update(usage.in_effect)
            queued.update(usage.queued)
            accounts.append((scope, usage))
    context = {
        "form": form,
        "state": state,
        "page": page,
        "query": page_query(request),
        "accounts": accounts,
        "in_effect": suspending,
        "queued": queued,
        "role_challenge": Role.CHALLENGE,
    }
    template = "console/challenges.html"
    return render(request, f"{template}#challenge-list" if request.htmx else template, context)
