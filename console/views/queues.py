"""The dashboard, the candidates queue with batch review, and the challenges list."""

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from urllib.parse import urlencode
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import OuterRef, Prefetch, Q, QuerySet, Subquery
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.views.decorators.http import require_GET, require_http_methods

from admissions.actions import record_verdict
from admissions.challenge_effects import challenges_of
from admissions.models import QueueKind, QueueSnapshot, Record, Role
from admissions.queues import QueueName, Waiting, waiting
from admissions.selectors import (
    candidates,
    challenge_summaries,
    fact_status,
    open_challenge_entries,
)
from admissions.snapshots import snapshot_day
from console.admission_forms import BatchReviewForm, CandidateFilterForm, ChallengeFilterForm
from console.queue_charts import DAYS, Day, QueueChart, queue_chart
from console.views.audit import in_words
from console.views.common import HtmxHttpRequest, page_query, paginate, refusals, steward_scopes
from memories.core.text import MAX_REASON_LENGTH
from memories.store.errors import Forbidden, Rejected, StateConflict
from memories.store.models import (
    AuditEntry,
    Bucket,
    Conflict,
    ConflictMember,
    Fact,
    Scope,
    active_claims,
)
from memories.store.roles import is_global_steward, steward_scope_ids

# --- dashboard ------------------------------------------------------------------------

# How many of the viewer's own actions the dashboard lists, the latest first.
RECENT_ACTIONS = 10
# How many of the viewer's own challenges it lists, the latest first.
MY_CHALLENGES = 10


@dataclass(frozen=True)
class Queue:
    """One count on the dashboard: its link, its oldest item, the age it should stay under,
    and its last 30 days drawn."""

    name: QueueName
    label: str
    figures: Waiting
    url: str
    verb: str
    target: timedelta
    now: datetime
    chart: QueueChart

    @property
    def count(self) -> int:
        return self.figures.count

    @property
    def more(self) -> bool:
        """Whether more items wait than ``count`` says (it stopped counting)."""
        return self.figures.more

    @property
    def oldest(self) -> datetime | None:
        return self.figures.oldest

    @property
    def over_target(self) -> bool:
        """Whether the oldest item has waited longer than the queue's target."""
        return self.oldest is not None and self.now - self.oldest > self.target

    @property
    def target_hours(self) -> int:
        return int(self.target.total_seconds() // 3600)


@require_GET
@login_required
def dashboard(request: HtmxHttpRequest) -> HttpResponse:
    """What waits for a human in the viewer's scopes, each queue's age against its
    target (``CLAIMGRAPH_QUEUE_TARGET_HOURS``), and the viewer's own recent actions."""
    now = timezone.now()
    scopes = Scope.objects.visible_to(request.user)
    counts = waiting(scopes)
    is_steward = steward_scopes(request.user).exists()
    targets = {
        queue: timedelta(hours=hours)
        for queue, hours in settings.CLAIMGRAPH_QUEUE_TARGET_HOURS.items()
    }
    charts = _charts(scopes, today=snapshot_day(now), targets=targets)
    links = {
        "conflicts": (reverse("conflicts"), "opened"),
        "candidates": (
            reverse("candidates") if is_steward else reverse("facts") + "?status=candidate",
            "recorded",
        ),
        "challenges": (reverse("challenges"), "filed"),
        "suspended": (reverse("facts") + "?status=suspended", "suspended"),
    }
    queues = [
        Queue(
            name,
            QueueKind(name).label,
            counts[name],
            url,
            verb,
            targets[name],
            now,
            charts[name],
        )
        for name, (url, verb) in links.items()
    ]
    context = {
        "queues": queues,
        "now": now,
        "scopes": scopes,
        "is_steward": is_steward,
        # The viewer's own challenges, each with what it does now or how it ended.
        "my_challenges": challenges_of(request.user, scopes.values("pk"), limit=MY_CHALLENGES),
        "my_challenges_limit": MY_CHALLENGES,
        "recent": in_words(
            request.user,
            list(
                AuditEntry.objects.visible_to(request.user)
                .filter(actor=request.user)
                .with_conflict_names()
                .select_related("scope")
                .order_by("-at", "-id")[:RECENT_ACTIONS]
            ),
        ),
    }
    return render(request, "console/dashboard.html", context)


def _charts(
    scopes: QuerySet[Scope], *, today: date, targets: dict[str, timedelta]
) -> dict[QueueName, QueueChart]:
    """Each queue's last ``DAYS`` days over ``scopes``, summed: the same scopes its count reads,
    so the chart's latest day and the number above it tell one story."""
    days: dict[str, list[Day]] = defaultdict(list)
    for row in QueueSnapshot.objects.daily_totals(scopes, since=today - timedelta(days=DAYS)):
        days[row["queue"]].append(Day(row["day"], row["size"], row["oldest_age_seconds"]))
    return {
        name: queue_chart(days[name], today=today, target_seconds=targets[name].total_seconds())
        for name in QueueKind.values
    }


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


def _shown_candidates(scope_ids: list[int]) -> Callable[[list], QuerySet[Fact]]:
    """Reads a page's candidates by id with what their rows show (``WindowPaginator.page``):
    the fact's display, its open conflict if any, and its claims.

    The queue's own statement also joins the verdicts, to leave out the facts
    that have one; with the six tables a row displays that is eight, which
    PostgreSQL took far longer to plan than to run. So the page's ids come from
    the queue without its joins, and its rows by id without the verdicts
    (docs/bench-log/2026-12-02-console-pages.md).
    """
    in_conflict = ConflictMember.objects.filter(
        fact=OuterRef("pk"), conflict__resolved_at__isnull=True
    ).order_by("conflict__opened_at", "conflict_id")

    def rows(ids: list) -> QuerySet[Fact]:
        return (
            Fact.objects.filter(pk__in=ids)
            .for_display()
            .annotate(open_conflict=Subquery(in_conflict.values("conflict_id")[:1]))
            .prefetch_related(active_claims(scope_ids=scope_ids))
        )

    return rows


def candidate_queue(user: User, query: QueryDict) -> QuerySet[Fact]:
    """The Candidates queue as its page lists it for these filters, in its order.

    The one home of the queue's filters and order: the queue page lists it,
    and the fact page follows it to the next candidate after a verdict.
    Raises Forbidden for an account that stewards none of its scopes.
    """
    filters = CandidateFilterForm(query or None, user=user)
    stewarded = _stewarded(user, filters.visible_scopes())
    if not stewarded:
        raise Forbidden("only stewards review candidates")
    return _candidates(filters, stewarded)


def next_candidate_url(user: User, queue: str) -> tuple[str, bool]:
    """Where a steward goes after a verdict on a candidate opened from the queue.

    ``queue`` is the queue page's query string. The first candidate left in
    that queue (the one just ruled on is no longer a candidate), with the same
    filters carried on; or the queue itself, and False, when none is left.
    """
    following = candidate_queue(user, QueryDict(queue)).first()
    if following is None:
        return reverse("candidates") + (f"?{queue}" if queue else ""), False
    return f"{reverse('fact', args=[following.pk])}?{urlencode({'queue': queue})}", True


def _after(listed: QuerySet[Fact], ruled: Fact) -> Fact | None:
    """The candidate that follows ``ruled`` in queue order, else the last one before it."""
    later = Q(recorded_at__gt=ruled.recorded_at) | Q(recorded_at=ruled.recorded_at, id__gt=ruled.pk)
    return listed.filter(later).first() or listed.exclude(pk=ruled.pk).last()


@dataclass(frozen=True)
class ReviewItem:
    """One item of a batch review: applied, or refused and why."""

    fact_id: str
    label: str
    applied: bool
    why: str = ""
    # After an applied verdict: its fact's conflicts it closed, and those still open.
    closed: tuple[Conflict, ...] = ()
    still_open: tuple[Conflict, ...] = ()
    reopened: tuple[Conflict, ...] = ()

    @property
    def conflicts_said(self) -> str:
        """What the verdict did to its fact's open conflicts, with links (``verdict_conflicts``)."""
        return verdict_conflicts(self.closed, self.still_open, self.reopened)


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
            recorded = record_verdict(
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
            outcomes.append(
                ReviewItem(
                    fact_id,
                    label,
                    True,
                    verdict,
                    tuple(recorded.closed),
                    tuple(recorded.still_open),
                    tuple(recorded.reopened),
                )
            )
    return outcomes


def verdict_conflicts(
    closed: Sequence[Conflict], still_open: Sequence[Conflict], reopened: Sequence[Conflict] = ()
) -> str:
    """A verdict's flash, continued: the conflicts it closed, and those that still wait.

    HTML, each conflict a link: a steward who admitted a side of a conflict
    must be able to go and rule it (a verdict settles no conflict), and one
    who rejected a side sees which conflict that closed. Empty when the fact
    was in no open conflict.
    """
    parts = [
        format_html(
            ' It no longer has two sides, so <a href="{}">its conflict on {} {}</a> closed.',
            reverse("conflict", args=[conflict.pk]),
            conflict.subject.name,
            conflict.predicate.name,
        )
        for conflict in closed
    ]
    again = {conflict.pk for conflict in reopened}
    parts += [
        format_html(
            ' <a href="{}">Its conflict on {} {}</a> {}: a verdict does not settle it;'
            " rule the conflict.",
            reverse("conflict", args=[conflict.pk]),
            conflict.subject.name,
            conflict.predicate.name,
            "is open again (its rejection had closed it)"
            if conflict.pk in again
            else "is still open",
        )
        for conflict in still_open
    ]
    return format_html_join("", "{}", ((part,) for part in parts))


# A row's two rulings: the verdict, its button's name and its key (console.js).
ROW_VERDICTS = [("admitted", "Admit", "a"), ("rejected", "Reject", "r")]


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
    """System facts without a verdict, oldest first; admitted or rejected one by one or several.

    A row's own Admit or Reject posts here with ``row`` set: the row leaves
    the list and the steward stays at the same filters, on the next row.
    """
    filters = CandidateFilterForm(request.GET or None, user=request.user)
    # The filter's scopes also say where the viewer is a steward: one query for both.
    scopes = filters.visible_scopes()
    stewarded = _stewarded(request.user, scopes)
    if not stewarded:
        raise Forbidden("only stewards review candidates")
    listed = _candidates(filters, stewarded)
    outcomes = None
    status = 200
    batch = BatchReviewForm()
    row_error = None
    focus = None
    if request.method == "POST":
        posted = BatchReviewForm(request.POST)
        one = "row" in request.POST
        if posted.is_valid():
            outcomes = _review(request, posted)
            if one:
                ruled = outcomes[0]
                focus = _ruled_one(request, ruled, listed)
                if not request.htmx:
                    # The same filters and page, scrolled to the next row: 303, a GET.
                    anchor = f"#row-{focus.pk}" if focus else ""
                    here = f"{reverse('candidates')}?{request.GET.urlencode()}"
                    response = redirect(here + anchor)
                    response.status_code = 303
                    return response
                outcomes = None
            else:
                messages.success(request, _review_summary(posted.cleaned_data["verdict"], outcomes))
        elif one:
            status = 400
            row_error = {
                "fact": request.POST.get("facts", ""),
                "verdict": request.POST.get("verdict", ""),
                "ground": request.POST.get("ground", ""),
                "errors": [error for errors in posted.errors.values() for error in errors],
            }
        else:
            status = 400
            batch = posted
    page = paginate(request, listed, filters, rows=_shown_candidates(stewarded))
    context = {
        "form": filters,
        "batch": batch,
        "outcomes": outcomes,
        "applied": [o for o in outcomes or [] if o.applied],
        "refused": [o for o in outcomes or [] if not o.applied],
        "page": page,
        "query": page_query(request),
        "now": timezone.now(),
        "row_error": row_error,
        "focus": str(focus.pk) if focus else "",
        "row_verdicts": ROW_VERDICTS,
        "ground_max": MAX_REASON_LENGTH,
    }
    template = "console/candidates.html"
    partial = request.htmx and not request.htmx.boosted
    return render(
        request, f"{template}#candidate-list" if partial else template, context, status=status
    )


def _ruled_one(request: HtmxHttpRequest, ruled: ReviewItem, listed: QuerySet[Fact]) -> Fact | None:
    """Say what a row's verdict did; the candidate to put the steward on next."""
    if ruled.applied:
        word = "Admitted" if ruled.why == "admitted" else "Rejected"
        said = format_html("{}: {}.", word, ruled.label)
        messages.success(request, format_html("{}{}", said, ruled.conflicts_said))
    else:
        messages.error(request, f"Not ruled on {ruled.label}: {ruled.why}.")
    fact = Fact.objects.filter(pk=ruled.fact_id).first() if _is_uuid(ruled.fact_id) else None
    return _after(listed, fact) if fact else listed.first()


# --- challenges -------------------------------------------------------------------------


@require_GET
@login_required
def challenges(request: HtmxHttpRequest) -> HttpResponse:
    """Challenges, open and resolved, with each account's flood cap in effect (SPEC §6)."""
    form = ChallengeFilterForm(request.GET or None, user=request.user)
    scopes = Scope.objects.visible_to(request.user)
    state = (form.cleaned_data["state"] if form.is_valid() else "") or "open"
    chosen = form.cleaned_data if form.is_valid() else {}
    if state == "open":
        # The open ones are listed from the derived state that holds exactly
        # them, not found among every challenge by looking for a refutation.
        entries = open_challenge_entries(
            scopes, scope=chosen.get("scope"), author_name=chosen.get("author", "")
        )
        page = paginate(request, entries, form)
        page.object_list = [entry.shown() for entry in page.object_list]
    else:
        rows = Record.objects.resolved() if state == "resolved" else Record.objects.challenges()
        rows = rows.filter(scope__in=scopes)
        if chosen.get("scope"):
            rows = rows.filter(scope=chosen["scope"])
        if chosen.get("author"):
            rows = rows.filter(author__username=chosen["author"])
        # The facts in a query of their own, as for the open ones
        # (admissions.selectors.open_challenge_entries).
        rows = (
            rows.select_related("scope", "author")
            .prefetch_related(Prefetch("fact", queryset=Fact.objects.named()))
            .with_refuted()
            .order_by("inserted_at", "id")
        )
        page = paginate(request, rows, form)

    # The cap per account in each scope on this page, read for all of them at once.
    page_scopes = {record.scope for record in page}
    summaries = challenge_summaries(scope.pk for scope in page_scopes)
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
