"""The facts browser, the fact page with its actions, and the subject page (SPEC §9).

The fact page shows everything about one fact: its provenance, its derived
status with the explanation in plain words, its records oldest first, its
supersession chain, its conflicts and its receipts (the accepted work it
shaped). Its actions — **Challenge** (anyone), **Refute** (a steward, per open
challenge), **Admit**/**Reject** (a steward), **Correct** (the author or a
steward) — are plain forms; with htmx the status panel is swapped in place.
"""

from uuid import UUID

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from admissions.actions import correct_fact, file_challenge, record_verdict, refute_challenge
from admissions.models import Record, Role
from admissions.selectors import (
    recall,
    status_and_records_from_rows,
    status_and_records_query,
    with_admission_status,
)
from console.admission_forms import (
    ChallengeForm,
    CorrectForm,
    FactFilterForm,
    RefuteForm,
    VerdictForm,
)
from console.views.common import (
    add_rejection,
    done,
    fill_small_relations,
    page_query,
    paginate,
    refusals,
    row_link,
)
from memories.actions import may_end
from memories.core.normalize import value_key
from memories.errors import NotFound, Rejected
from memories.lookups import (
    Columns,
    batch,
    readable_fact,
    rows,
)
from memories.merges import merge_target_id, visible_entity
from memories.models import (
    Bucket,
    Conflict,
    ConflictMember,
    Entity,
    Fact,
    Outcome,
    Predicate,
    Scope,
)
from memories.roles import is_steward_of
from memories.vocabulary import attach_vocabulary

CHAIN_LIMIT = 25


# --- facts browser --------------------------------------------------------------------


def _filtered_facts(request: HttpRequest, form: FactFilterForm) -> QuerySet[Fact]:
    facts = Fact.objects.readable_by(request.user)
    if not form.is_valid():
        return with_admission_status(facts.with_disputed())
    data = form.cleaned_data
    if data["scope"]:
        facts = facts.filter(scope=data["scope"])
    if data["q"]:
        key = value_key(data["q"])
        facts = facts.filter(Q(subject__key__contains=key) | Q(subject__alias_keys__contains=[key]))
    if data["subject"]:
        key = value_key(data["subject"])
        facts = facts.filter(Q(subject__key=key) | Q(subject__alias_keys__contains=[key]))
    if data["predicate"]:
        facts = facts.filter(predicate=data["predicate"])
    if data["source"]:
        facts = facts.filter(source_type=data["source"])
    if data["epistemic"]:
        facts = facts.filter(epistemic=data["epistemic"])
    if data["bucket"]:
        facts = facts.filter(bucket=data["bucket"])
    facts = with_admission_status(facts.with_disputed())
    status = data["status"]
    if status in ("candidate", "admitted", "suspended", "rejected"):
        facts = facts.filter(bucket=Bucket.SYSTEM, admission_status=status)
    elif status == "disputed":
        facts = facts.filter(disputed=True)
    elif status == "live":
        facts = facts.filter(t_invalid__isnull=True)
    elif status in ("invalidated", "superseded", "withdrawn"):
        facts = facts.filter(t_invalid__isnull=False, invalidation_kind=status)
    return facts


@require_GET
@login_required
def facts(request: HttpRequest) -> HttpResponse:
    """Every fact the viewer may read, newest first, searchable by subject name."""
    form = FactFilterForm(request.GET or None, user=request.user)
    rows = (
        _filtered_facts(request, form)
        .select_related("subject", "object_ref")
        .order_by("-recorded_at", "-id")
    )
    page = paginate(request, rows, form)
    page.object_list = fill_small_relations(page.object_list)
    context = {
        "form": form,
        "page": page,
        "query": page_query(request),
        "now": timezone.now(),
    }
    template = "console/facts.html"
    return render(request, f"{template}#fact-results" if request.htmx else template, context)


# --- the fact page ---------------------------------------------------------------------


def _chain(fact: Fact, previous: list[tuple], following: list[tuple]) -> list[Fact]:
    """The supersession chain through ``fact``, oldest first (bounded both ways).

    ``previous`` and ``following`` are the rows of the first link each way
    (``_PREVIOUS_LINK_SQL`` and ``_LINK_SQL``), read together with the rest
    of the page; most facts have no link at all. Each further link is one
    small statement: a recursive query for the whole chain took PostgreSQL
    longer to plan than these take to run.
    """
    before: list[Fact] = []
    found = previous
    for _ in range(CHAIN_LIMIT):
        if not found:
            break
        before.insert(0, _link(found[0]))
        if len(before) == CHAIN_LIMIT:
            break
        found = rows(_PREVIOUS_LINK_SQL, {"fact": before[0].pk})
    after: list[Fact] = []
    found = following
    while found and len(after) < CHAIN_LIMIT:
        after.append(_link(found[0]))
        if after[-1].superseded_by_id is None or len(after) == CHAIN_LIMIT:
            break
        found = rows(_LINK_SQL, {"fact": after[-1].superseded_by_id})
    attach_vocabulary([*before, *after])
    link = row_link("fact")
    for other in (*before, *after):
        other.url = link(other.pk)
    return [*before, fact, *after]


def _link(row) -> Fact:
    link = _LINK.build(row)
    link.object_ref = _OBJECT.build(row, _LINK.width)
    return link


# A link shows its object and source, valid times and id.
_LINK = Columns(Fact, "f")
_OBJECT = Columns(Entity, "o")
_LINK_COLUMNS = f"""SELECT {_LINK.sql}, {_OBJECT.sql} FROM {Fact._meta.db_table} f
  LEFT JOIN {Entity._meta.db_table} o ON o.id = f.object_ref_id"""
_PREVIOUS_LINK_SQL = f"""{_LINK_COLUMNS}
 WHERE f.superseded_by_id = %(fact)s ORDER BY f.recorded_at, f.id LIMIT 1"""
_LINK_SQL = f"{_LINK_COLUMNS} WHERE f.id = %(fact)s"


def _memberships(found: list[tuple]) -> list[ConflictMember]:
    """The conflicts the fact is a member of, newest first, with their subject and predicate."""
    link = row_link("conflict")
    memberships = []
    for row in found:
        member = _MEMBER.build(row)
        member.conflict = conflict = _CONFLICT.build(row, _MEMBER.width)
        at = _MEMBER.width + _CONFLICT.width
        conflict.subject = _ENTITY.build(row, at)
        conflict.predicate = _PREDICATE.build(row, at + _ENTITY.width)
        member.url = link(member.conflict_id)
        memberships.append(member)
    return memberships


def _receipts(found: list[tuple]) -> list[Outcome]:
    """The latest accepted work reported as using the fact, with who reported it."""
    receipts = []
    for row in found:
        outcome = _OUTCOME.build(row)
        outcome.reported_by = _USER.build(row, _OUTCOME.width)
        receipts.append(outcome)
    return receipts


_USER = Columns(get_user_model(), "u", ["id", "username"])
_USER_TABLE = get_user_model()._meta.db_table
_MEMBER = Columns(ConflictMember, "m")
_CONFLICT = Columns(Conflict, "c")
_ENTITY = Columns(Entity, "e")
_PREDICATE = Columns(Predicate, "p")
_MEMBERSHIPS_SQL = f"""
SELECT {_MEMBER.sql}, {_CONFLICT.sql}, {_ENTITY.sql}, {_PREDICATE.sql}
  FROM {ConflictMember._meta.db_table} m
  JOIN {Conflict._meta.db_table} c ON c.id = m.conflict_id
  JOIN {Entity._meta.db_table} e ON e.id = c.subject_id
  JOIN {Predicate._meta.db_table} p ON p.id = c.predicate_id
 WHERE m.fact_id = %(fact)s
 ORDER BY c.opened_at DESC
"""
_OUTCOME = Columns(Outcome, "o")
_RECEIPTS_SQL = f"""
SELECT {_OUTCOME.sql}, {_USER.sql}
  FROM {Outcome._meta.db_table} o
  JOIN {Outcome.facts.through._meta.db_table} used ON used.outcome_id = o.id
  JOIN {_USER_TABLE} u ON u.id = o.reported_by_id
 WHERE used.fact_id = %(fact)s
 ORDER BY o.reported_at DESC
 LIMIT 50
"""


def _fact_context(request: HttpRequest, fact: Fact, forms: dict | None = None) -> dict:
    forms = forms or {}
    now = timezone.now()
    steward = is_steward_of(request.user, fact.scope)
    system = fact.bucket == Bucket.SYSTEM
    # The page's reads after the fact itself do not depend on each other:
    # they go to PostgreSQL together, one round trip. The status and the
    # records it is derived from come from one statement.
    statements = [
        (_MEMBERSHIPS_SQL, {"fact": fact.pk}),
        (_RECEIPTS_SQL, {"fact": fact.pk}),
        (_PREVIOUS_LINK_SQL, {"fact": fact.pk}),
    ]
    if fact.superseded_by_id is not None:
        statements.append((_LINK_SQL, {"fact": fact.superseded_by_id}))
    if system:
        statements.append(status_and_records_query(fact))
    found = batch(*statements)
    memberships, receipts, previous = found[:3]
    following = found[3] if fact.superseded_by_id is not None else []
    status, records = status_and_records_from_rows(fact, found[-1]) if system else (None, [])
    refuted = {record.challenge_id for record in records if record.role == Role.REFUTATION}
    entries = [
        {
            "record": record,
            "open": record.role == Role.CHALLENGE and record.pk not in refuted,
            "refute_form": forms.get(("refute", record.pk))
            or RefuteForm(auto_id=f"id_refute_{record.pk.hex[:8]}_%s"),
        }
        for record in records
    ]
    may_correct = fact.is_live and may_end(request.user, fact)
    return {
        "fact": fact,
        "now": now,
        "effective": fact.effective_confidence(now),
        "status": status,
        "records": entries,
        "chain": _chain(fact, previous, following),
        "memberships": _memberships(memberships),
        "receipts": _receipts(receipts),
        "is_steward": steward,
        "may_challenge": system,
        "may_correct": may_correct,
        "verdict_form": forms.get("verdict") or VerdictForm(auto_id="id_verdict_%s"),
        "challenge_form": forms.get("challenge") or ChallengeForm(auto_id="id_challenge_%s"),
        "correct_form": forms.get("correct")
        or CorrectForm(
            auto_id="id_correct_%s",
            initial={
                "object": fact.object_display,
                "source_type": fact.source_type.name,
                "confidence": fact.confidence,
                "epistemic": fact.epistemic,
            },
        ),
    }


@require_GET
@login_required
@refusals
def fact(request: HttpRequest, fact_id) -> HttpResponse:
    found = readable_fact(request.user, fact_id)
    return render(request, "console/fact.html", _fact_context(request, found))


def _after_record(request: HttpRequest, found: Fact, message: str) -> HttpResponse:
    """htmx: the refreshed status panel in place; otherwise post/redirect/get."""
    if request.htmx:
        fresh = readable_fact(request.user, found.pk)
        return render(request, "console/fact.html#fact-status", _fact_context(request, fresh))
    return done(request, message, reverse("fact", args=[found.pk]))


def _refused_input(request: HttpRequest, found: Fact, key, form) -> HttpResponse:
    """The page (or, for htmx, the panel) again with the form's errors: a 400."""
    context = _fact_context(request, found, {key: form})
    template = "console/fact.html#fact-status" if request.htmx else "console/fact.html"
    return render(request, template, context, status=400)


@require_POST
@login_required
@refusals
def verdict(request: HttpRequest, fact_id) -> HttpResponse:
    found = readable_fact(request.user, fact_id)
    form = VerdictForm(request.POST)
    if form.is_valid():
        try:
            record_verdict(
                actor=request.user,
                fact_id=found.pk,
                verdict=form.cleaned_data["verdict"],
                ground=form.cleaned_data["ground"],
            )
        except Rejected as error:
            add_rejection(form, error)
        else:
            word = "Admitted" if form.cleaned_data["verdict"] == "admitted" else "Rejected"
            return _after_record(request, found, f"{word}: {found}.")
    return _refused_input(request, found, "verdict", form)


@require_POST
@login_required
@refusals
def challenge(request: HttpRequest, fact_id) -> HttpResponse:
    found = readable_fact(request.user, fact_id)
    form = ChallengeForm(request.POST)
    if form.is_valid():
        try:
            file_challenge(
                actor=request.user,
                fact_id=found.pk,
                ground=form.cleaned_data["ground"],
                evidence=form.cleaned_data["evidence"],
            )
        except Rejected as error:
            add_rejection(form, error)
        else:
            return _after_record(request, found, f"Challenge filed against {found}.")
    return _refused_input(request, found, "challenge", form)


@require_POST
@login_required
@refusals
def refute(request: HttpRequest, challenge_id) -> HttpResponse:
    form = RefuteForm(request.POST)
    if form.is_valid():
        try:
            refutation = refute_challenge(
                actor=request.user,
                challenge_id=challenge_id,
                ground=form.cleaned_data["ground"],
            )
        except Rejected as error:
            add_rejection(form, error)
        else:
            found = readable_fact(request.user, refutation.fact_id)
            return _after_record(request, found, f"Challenge refuted; {found} stands.")
    # The challenge must be visible before its page is shown with the error.
    target = (
        Record.objects.filter(
            pk=_uuid_or_none(challenge_id),
            role=Role.CHALLENGE,
            scope__in=Scope.objects.visible_to(request.user),
        )
        .values_list("fact_id", flat=True)
        .first()
    )
    if target is None:
        raise NotFound("challenge")
    found = readable_fact(request.user, target)
    return _refused_input(request, found, ("refute", UUID(str(challenge_id))), form)


@require_POST
@login_required
@refusals
def correct(request: HttpRequest, fact_id) -> HttpResponse:
    found = readable_fact(request.user, fact_id)
    form = CorrectForm(request.POST)
    if form.is_valid():
        try:
            correction = correct_fact(
                actor=request.user,
                fact_id=found.pk,
                changes=form.changes(found),
                ground=form.cleaned_data["ground"],
            )
        except Rejected as error:
            add_rejection(form, error)
        else:
            replacement = correction.replacement
            return done(
                request,
                f"Corrected: {found} is superseded by {replacement}.",
                reverse("fact", args=[replacement.pk]),
            )
    return _refused_input(request, found, "correct", form)


def _uuid_or_none(value) -> UUID | None:
    try:
        return UUID(str(value))
    except ValueError:
        return None


# --- the subject page --------------------------------------------------------------------


@require_GET
@login_required
@refusals
def subject(request: HttpRequest, entity_id: int) -> HttpResponse:
    """What the store currently holds true about one entity, ranked (SPEC §5)."""
    entity = visible_entity(request.user, entity_id)
    now = timezone.now()
    merged_into = merge_target_id(entity.pk)
    truth = recall(viewer=request.user, scope=entity.scope, subject=entity.name, as_of=now)
    pending = (
        with_admission_status(
            Fact.objects.readable_by(request.user)
            .filter(subject=entity, t_invalid__isnull=True)
            .with_disputed()
        )
        .filter(Q(disputed=True) | Q(bucket=Bucket.SYSTEM) & ~Q(admission_status="admitted"))
        .select_related("subject", "object_ref")
        .order_by("predicate__name", "recorded_at")[:100]
    )
    pending = fill_small_relations(pending)
    context = {
        "entity": entity,
        "truth": truth,
        "pending": pending,
        "now": now,
        "merged_into": visible_entity(request.user, merged_into) if merged_into else None,
        "merged_here": entity.merges_into.in_force().select_related("entity"),
        "facts_url": reverse("facts") + f"?scope={entity.scope.name}&subject={entity.name}",
    }
    return render(request, "console/subject.html", context)
