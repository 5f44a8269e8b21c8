"""The conflicts queue and the conflict page (SPEC §3, §9).

The page shows the candidates side by side with equal weight: ordered by
recorded time (then id), never by confidence or trust, with no control
pre-selected and nothing marked as recommended. A steward rules with **Keep
this** (per candidate), **Both stand** or **Dismiss**, each in its own form
with its own reason; everyone else sees the same page without the controls,
and a forged POST is refused by ``resolve_conflict`` itself.
"""

from html import escape

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.timesince import timesince
from django.utils.timezone import localtime
from django.views.decorators.http import require_GET, require_POST

from admissions.selectors import statuses_from_rows, statuses_query
from console import timeline
from console.forms import ConflictFilterForm, ResolveForm
from console.views.common import (
    SqlRows,
    add_rejection,
    done,
    in_list,
    page_query,
    paginate,
    refusals,
    row_link,
)
from memories.actions import may_resolve, resolve_conflict
from memories.core.confidence import fact_decays
from memories.errors import Forbidden, Rejected
from memories.lookups import (
    FACT_ROW_COLUMNS,
    Columns,
    batch,
    fact_from_row,
    visible_conflict,
)
from memories.models import (
    Bucket,
    Conflict,
    ConflictMember,
    Entity,
    Fact,
    Predicate,
    Scope,
    SourceType,
)
from memories.vocabulary import attach_vocabulary, load_vocabulary

SLOT_HISTORY_LIMIT = 60


@require_GET
@login_required
def conflicts(request: HttpRequest) -> HttpResponse:
    """Open conflicts, oldest first: the queue a steward works through."""
    form = ConflictFilterForm(request.GET or None, user=request.user)
    # The scope ids as a list, not a subquery: with them PostgreSQL walks the
    # open-conflict index in age order and stops at the page's end.
    scopes = form.visible_scopes()
    params: dict = {}
    conditions = [in_list("c.scope_id", scopes, params, "scope_id")]
    state = "open"
    if form.is_valid():
        state = form.cleaned_data["state"] or "open"
        if form.cleaned_data["scope"]:
            conditions.append("c.scope_id = %(scope)s")
            params["scope"] = form.cleaned_data["scope"].pk
        if form.cleaned_data["kind"]:
            conditions.append("c.kind = %(kind)s")
            params["kind"] = form.cleaned_data["kind"]
    if state == "open":
        conditions.append("c.resolved_at IS NULL")
        order = "c.opened_at, c.id"
    elif state == "resolved":
        conditions.append("c.resolved_at IS NOT NULL")
        order = "c.resolved_at DESC, c.id DESC"
    else:
        order = "c.opened_at DESC, c.id DESC"
    listed = SqlRows(
        table=f"{Conflict._meta.db_table} c",
        where=" AND ".join(conditions),
        order=order,
        params=params,
        columns=_QUEUE_COLUMNS,
        joins=f"JOIN {Entity._meta.db_table} e ON e.id = c.subject_id",
        build=_queue_row,
    )
    page = paginate(request, listed, form)
    now = timezone.now()
    page.object_list = _fill_queue_rows(page.object_list, scopes, now)
    context = {
        "form": form,
        "state": state,
        "page": page,
        "query": page_query(request),
        "now": now,
    }
    template = "console/conflicts.html"
    return render(request, f"{template}#conflict-list" if request.htmx else template, context)


# What a queue row shows of a conflict, its subject's name, and each
# candidate's object (an entity's name, else the literal) and source type id,
# oldest recorded first. The candidates by lookups in the row's select list,
# which PostgreSQL runs only for the rows of the page.
_QUEUE_COLUMNS = f"""c.id, c.scope_id, c.kind, c.predicate_id, c.opened_at, c.resolved_at,
    c.resolved_by_id, c.resolution, e.name,
    ARRAY(SELECT coalesce(nullif(o.name, ''), f.object_lit)
            FROM {ConflictMember._meta.db_table} m
            JOIN {Fact._meta.db_table} f ON f.id = m.fact_id
            LEFT JOIN {Entity._meta.db_table} o ON o.id = f.object_ref_id
           WHERE m.conflict_id = c.id ORDER BY f.recorded_at, f.id),
    ARRAY(SELECT f.source_type_id
            FROM {ConflictMember._meta.db_table} m
            JOIN {Fact._meta.db_table} f ON f.id = m.fact_id
           WHERE m.conflict_id = c.id ORDER BY f.recorded_at, f.id)"""


def _queue_row(row) -> dict:
    pk, scope_id, kind, predicate_id, opened_at, resolved_at, ruler_id, resolution, subject = row[
        :9
    ]
    objects, sources = row[9:]
    return {
        "candidates": list(zip(objects, sources, strict=True)),
        "pk": pk,
        "scope_id": scope_id,
        "kind": kind,
        "predicate_id": predicate_id,
        "opened_at": opened_at,
        "resolved_at": resolved_at,
        "resolved_by_id": ruler_id,
        "resolution": resolution,
        "subject": subject,
        "is_open": resolved_at is None,
    }


def _fill_queue_rows(page: list[dict], scopes: dict[int, Scope], now) -> list[dict]:
    """Complete each row of a queue page with what it shows, as plain values.

    The rows are dictionaries of display values (names, the link, the age)
    rather than model objects: the template reads a dictionary's keys
    faster than an object's attributes, which was a quarter of the time of
    rendering 25 rows. An open conflict's age is written out here, as the
    ``date:'c'`` and ``timesince`` filters would (the same functions): the
    two filters were half of that time.

    Plain values rather than prefetched members and facts: a queue row shows
    two words per candidate, and building full fact objects for them cost
    more than the rest of the page's queries together (read with hand-written
    SQL: the ORM's query for them cost more Python than running it). Scope,
    predicate, source and ruler come from small lookups rather than joins,
    which PostgreSQL spends longer planning than running; the scopes are the
    viewer's, already read, and the vocabulary is the process's copy.
    """
    vocabulary = load_vocabulary()
    predicates = dict(vocabulary.predicate_names)
    missing = {item["predicate_id"] for item in page} - predicates.keys()
    if missing:  # newer than the process's copy of the vocabulary
        predicates |= dict(Predicate.objects.filter(pk__in=missing).values_list("pk", "name"))
    rulers = {item["resolved_by_id"] for item in page} - {None}
    users = get_user_model().objects.only("username").in_bulk(rulers) if rulers else {}
    sources = dict(vocabulary.source_names)
    missing = {source for item in page for _, source in item["candidates"]} - sources.keys()
    if missing:
        sources |= dict(SourceType.objects.filter(pk__in=missing).values_list("pk", "name"))
    link = row_link("conflict")
    for item in page:
        item["scope"] = scopes[item["scope_id"]].name
        item["predicate"] = predicates[item["predicate_id"]]
        item["url"] = link(item["pk"])
        # The cell's list items, escaped as the template escapes (Django's
        # escape() is html.escape of the text): a loop per row inside the
        # rows' loop was half the page's render time. Plain text from the
        # database, never markup, so each value is escaped.
        item["candidates"] = mark_safe(
            "".join(
                f'<li>{escape(str(value))} <small class="muted">'
                f"({escape(sources[source])})</small></li>"
                for value, source in item["candidates"]
            )
        )
        if item["is_open"]:
            item["opened_iso"] = localtime(item["opened_at"]).isoformat()
            item["open_for"] = timesince(item["opened_at"], now)
        else:
            ruler = users.get(item["resolved_by_id"])
            item["ruler"] = ruler.username if ruler else ""
    return page


def _members(conflict: Conflict, found: list[tuple]) -> list[ConflictMember]:
    """The members with their facts (scope, subject, object, author), oldest recorded first."""
    members = []
    for row in found:
        member = _MEMBER.build(row)
        member.conflict = conflict
        member.fact = fact_from_row(row, _MEMBER.width)
        members.append(member)
    return members


def _slot_history(request: HttpRequest, conflict: Conflict, members: list[ConflictMember]):
    """The slot's facts the viewer may read (the newest ones), oldest first.

    The slot is the conflict's scope and subject, and its predicate or every
    predicate of its exclusion group; only the members' buckets.
    """
    in_slot = Q(predicate_id=conflict.predicate_id)
    if conflict.predicate.exclusion_group:
        group = Predicate.objects.filter(exclusion_group=conflict.predicate.exclusion_group)
        in_slot |= Q(predicate_id__in=group.values("pk"))
    newest = (
        Fact.objects.readable_by(request.user)
        .filter(
            in_slot,
            scope_id=conflict.scope_id,
            subject_id=conflict.subject_id,
            bucket__in=sorted({member.fact.bucket for member in members}),
        )
        .select_related("scope", "subject", "object_ref", "author", "invalidated_by")
        .order_by("-recorded_at", "-id")[:SLOT_HISTORY_LIMIT]
    )
    return list(reversed(newest))


_MEMBER = Columns(ConflictMember, "m")
_MEMBERS_SQL = f"""
SELECT {_MEMBER.sql}, {FACT_ROW_COLUMNS}
  FROM {ConflictMember._meta.db_table} m
  JOIN {Fact._meta.db_table} f ON f.id = m.fact_id
 WHERE m.conflict_id = %(conflict)s
 ORDER BY f.recorded_at, f.id
"""


def _earlier(row, link) -> Conflict:
    conflict = _EARLIER.build(row)
    conflict.url = link(conflict.pk)
    return conflict


# Earlier conflicts on the slot show their kind, dates, resolution and reason.
_EARLIER = Columns(Conflict, "c")
_EARLIER_SQL = f"""
SELECT {_EARLIER.sql} FROM {Conflict._meta.db_table} c
 WHERE c.scope_id = %(scope)s AND c.subject_id = %(subject)s
   AND c.predicate_id = %(predicate)s AND c.id <> %(conflict)s
 ORDER BY c.opened_at DESC
 LIMIT 20
"""


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


def _conflict_context(request: HttpRequest, conflict: Conflict, forms: dict | None = None):
    now = timezone.now()
    # The members with the earlier conflicts in one round trip, then what
    # depends on the members (their buckets, their facts' statuses).
    found_members, found_earlier = batch(
        (_MEMBERS_SQL, {"conflict": conflict.pk}),
        (
            _EARLIER_SQL,
            {
                "scope": conflict.scope_id,
                "subject": conflict.subject_id,
                "predicate": conflict.predicate_id,
                "conflict": conflict.pk,
            },
        ),
    )
    members = _members(conflict, found_members)
    facts = [member.fact for member in members]
    history = _slot_history(request, conflict, members)
    statuses_read = statuses_query(facts)
    statuses = statuses_from_rows(facts, batch(statuses_read)[0]) if statuses_read else {}
    attach_vocabulary([*facts, *history])
    disputed = {member.fact_id for member in members if member.disputes and conflict.is_open}
    # Each row's link from one walk of the URL resolver per kind, not one per row.
    fact_link, conflict_link = row_link("fact"), row_link("conflict")
    for fact in history:
        fact.url = fact_link(fact.pk)
    candidates = [
        {
            "member": member,
            "fact": member.fact,
            "url": fact_link(member.fact_id),
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
    earlier = [_earlier(row, conflict_link) for row in found_earlier]
    steward = conflict.is_open and may_resolve(request.user, conflict)
    return {
        "conflict": conflict,
        "candidates": candidates,
        "history": history,
        "earlier": earlier,
        "timeline": _timeline(
            conflict, history, {member.fact_id for member in members}, disputed, now
        ),
        "now": now,
        "may_resolve": steward,
        "coexist_form": (forms or {}).get(("coexist", None))
        or ResolveForm(initial={"action": "coexist"}, auto_id="id_coexist_%s"),
        "dismiss_form": (forms or {}).get(("dismiss", None))
        or ResolveForm(initial={"action": "dismiss"}, auto_id="id_dismiss_%s"),
        "user_bucket": any(member.fact.bucket == Bucket.USER for member in members),
    }


@require_GET
@login_required
@refusals
def conflict(request: HttpRequest, conflict_id) -> HttpResponse:
    found = visible_conflict(request.user, conflict_id)
    return render(request, "console/conflict.html", _conflict_context(request, found))


@require_POST
@login_required
@refusals
def resolve(request: HttpRequest, conflict_id) -> HttpResponse:
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
