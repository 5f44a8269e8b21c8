"""The facts browser, the fact page with its actions, and the subject page (SPEC §9).

The fact page shows everything about one fact: its provenance, its derived
status with the explanation in plain words, its records oldest first, its
supersession chain, its conflicts and its receipts (the accepted work it
shaped). Its actions — **Challenge** (anyone), **Refute** (a steward, per open
challenge), **Admit**/**Reject** (a steward), **Correct** (the author or a
steward) — are plain forms; with htmx the status panel is swapped in place.
"""

from collections.abc import Callable
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.forms import Form
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_POST

from admissions.actions import correct_fact, file_challenge, record_verdict, refute_challenge
from admissions.challenge_effects import challenge_effects, challenge_forecast
from admissions.models import FactVerdict, Record, Role
from admissions.selectors import (
    fact_status_and_records,
    recall,
    suspended_fact_ids,
    with_admission_status,
)
from console import slot_pictures
from console.admission_forms import (
    ChallengeForm,
    CorrectForm,
    FactFilterForm,
    RefuteForm,
    VerdictForm,
    evidence_text,
)
from console.explain import explanation_parts
from console.truth_panels import slot_panels
from console.views.common import (
    HtmxHttpRequest,
    add_rejection,
    done,
    page_query,
    paginate,
    refusals,
)
from console.views.queues import next_candidate_url, verdict_conflicts
from memories.core.normalize import value_key
from memories.core.text import MAX_REASON_LENGTH
from memories.reads.history import slot_of, slots_of_entity
from memories.reads.selectors import supersession_chain
from memories.store.errors import ChallengeAlreadyOpen, NotFound, Rejected
from memories.store.lookups import readable_fact
from memories.store.models import Bucket, ConflictMember, Fact, Outcome, Scope, TruthSlot
from memories.store.permissions import may_end
from memories.store.roles import is_steward_of
from memories.write.merges import merge_target_id, visible_entity

# How many links of the supersession chain the fact page shows each way.
CHAIN_LIMIT = 25
# How many receipts the fact page shows, the latest first.
RECEIPTS_SHOWN = 50
# How many versions of its slot the fact page draws and lists (the newest), as the conflict page.
SLOT_HISTORY_LIMIT = 60
# How many versions of each slot a subject page's small multiple draws (the newest).
SUBJECT_SLOT_VERSIONS = 12


# --- facts browser --------------------------------------------------------------------


def _filtered_facts(user: User, form: FactFilterForm) -> QuerySet[Fact]:
    """The facts ``user`` may read that the filters name (``_shown_facts`` reads a page's rows)."""
    facts = Fact.objects.readable_by(user)
    if not form.is_valid():
        return facts
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
    if status == "suspended":
        # The suspended ids are the rule's own answer (admissions.selectors),
        # so they alone filter: PostgreSQL starts from the few suspended facts,
        # and a second, redundant filter on the annotated status would only
        # make it expect a handful of rows and join the page's names row by row.
        facts = facts.filter(pk__in=suspended_fact_ids())
    elif status in ("candidate", "admitted", "rejected"):
        facts = facts.filter(bucket=Bucket.SYSTEM, admission_status=status)
        # The status is the rule; these say where to look, so PostgreSQL starts
        # from the verdicts instead of computing the status of every fact.
        if status == "candidate":
            facts = facts.exclude(Exists(FactVerdict.objects.filter(fact=OuterRef("pk"))))
        else:
            verdicts = FactVerdict.objects.filter(fact=OuterRef("pk"), verdict=status)
            facts = facts.filter(Exists(verdicts))
    elif status == "disputed":
        facts = facts.filter(disputed=True)
    elif status == "live":
        facts = facts.live()
    elif status in ("invalidated", "superseded", "withdrawn"):
        facts = facts.filter(t_invalid__isnull=False, invalidation_kind=status)
    return facts


def _shown_facts(user: User) -> Callable[[list], QuerySet[Fact]]:
    """Reads a page's facts by id with what their rows show: names, status badge, dispute."""

    def rows(ids: list) -> QuerySet[Fact]:
        shown = Fact.objects.readable_by(user).filter(pk__in=ids).with_disputed()
        return with_admission_status(shown).for_display()

    return rows


@require_GET
@login_required
def facts(request: HtmxHttpRequest) -> HttpResponse:
    """Every fact the viewer may read, newest first, searchable by subject name."""
    form = FactFilterForm(request.GET or None, user=request.user)
    listed = _filtered_facts(request.user, form).order_by("-recorded_at", "-id")
    context = {
        "form": form,
        "page": paginate(request, listed, form, rows=_shown_facts(request.user)),
        "query": page_query(request),
    }
    template = "console/facts.html"
    return render(request, f"{template}#fact-results" if request.htmx else template, context)


# --- the fact page ---------------------------------------------------------------------


def _fact_context(
    user: User,
    fact: Fact,
    forms: dict[Any, Form] | None = None,
    *,
    queue: str | None = None,
    pictures: bool = True,
) -> dict[str, Any]:
    """Everything the fact page shows; ``forms`` are bound forms to show with their errors.

    ``queue`` is the query string of the Candidates queue the fact was opened
    from (None when it was not): a verdict then leads to that queue's next
    candidate. Without ``pictures`` (an htmx swap of the status panel alone)
    the slot and the decay chart are neither read nor drawn.
    """
    forms = forms or {}
    now = timezone.now()
    status, records = fact_status_and_records(fact)
    refuted = {record.challenge_id for record in records if record.role == Role.REFUTATION}
    # Each record is numbered in the list, and named by that number everywhere on the page.
    numbers = {record.pk: number for number, record in enumerate(records, start=1)}
    queued = set(status.queued) if status else set()
    # One open challenge per account and fact: the viewer's own, if any, is
    # shown instead of the form; else the form says what a challenge would do.
    own_open = next(
        (
            record
            for record in records
            if record.role == Role.CHALLENGE
            and record.author_id == user.pk
            and record.pk not in refuted
        ),
        None,
    )
    forecast = (
        challenge_forecast(user, fact, status) if status is not None and own_open is None else None
    )
    entries = [
        {
            "record": record,
            "number": numbers[record.pk],
            "open": record.role == Role.CHALLENGE and record.pk not in refuted,
            "queued": record.pk in queued,
            "answers": numbers.get(record.challenge_id),
            "refute_form": forms.get(("refute", record.pk))
            or RefuteForm(auto_id=f"id_refute_{record.pk.hex[:8]}_%s"),
        }
        for record in records
    ]
    memberships = (
        ConflictMember.objects.filter(fact=fact)
        .select_related("conflict__subject", "conflict__predicate")
        .order_by("-conflict__opened_at", "conflict_id")
    )
    receipts = (
        Outcome.objects.filter(facts=fact)
        .select_related("reported_by")
        .order_by("-reported_at", "-id")[:RECEIPTS_SHOWN]
    )
    return {
        "fact": fact,
        "now": now,
        "effective": fact.effective_confidence(now),
        **(_pictures(user, fact, now) if pictures else {}),
        "status": status,
        "explanation": explanation_parts(status, numbers) if status else [],
        "records": entries,
        # A verdict cannot lift a suspension (SPEC §6 rule 5): only a refutation does;
        # an admitted fact has nothing a second Admit would change.
        "may_admit": status is not None and status.status not in ("suspended", "admitted"),
        "queue": queue,
        "ground_max": MAX_REASON_LENGTH,
        "chain": supersession_chain(fact, limit=CHAIN_LIMIT),
        "memberships": memberships,
        # Said beside Admit: a verdict on one side of a conflict settles nothing.
        "open_conflicts": [m.conflict for m in memberships if m.conflict.is_open],
        "receipts": receipts,
        "is_steward": is_steward_of(user, fact.scope),
        "may_challenge": fact.bucket == Bucket.SYSTEM,
        "may_correct": fact.is_live and may_end(user, fact),
        "verdict_form": forms.get("verdict") or VerdictForm(auto_id="id_verdict_%s"),
        "verdict_failed": forms["verdict"].data.get("verdict") if "verdict" in forms else "",
        "challenge_form": forms.get("challenge") or ChallengeForm(auto_id="id_challenge_%s"),
        "challenge_forecast": forecast,
        "own_open_challenge": own_open,
        "own_open_number": numbers.get(own_open.pk) if own_open else None,
        "correct_form": forms.get("correct")
        or CorrectForm(
            auto_id="id_correct_%s",
            initial={
                "object": fact.object_display,
                "source_type": fact.source_type.name,
                "confidence": fact.confidence,
                "epistemic": fact.epistemic,
                "evidence": evidence_text(fact.evidence),
            },
        ),
    }


def _pictures(user: User, fact: Fact, now) -> dict[str, Any]:
    """The fact's slot (timeline and history, the fact itself marked) and its decay chart."""
    history = slot_of(viewer=user, fact=fact, limit=SLOT_HISTORY_LIMIT)
    across_group = bool(fact.predicate.exclusion_group)
    drawn = slot_pictures.spans(
        history,
        across_group=across_group,
        current=fact.pk,
        disputed=slot_pictures.disputed_of(history),
    )
    return {
        "decay": slot_pictures.decay_of(fact, now=now),
        "history": history,
        "across_group": across_group,
        "timeline": slot_pictures.draw(drawn, now=now),
    }


@require_GET
@login_required
@refusals
def fact(request: HtmxHttpRequest, fact_id: UUID) -> HttpResponse:
    found = readable_fact(request.user, fact_id)
    context = _fact_context(request.user, found, queue=request.GET.get("queue"))
    return render(request, "console/fact.html", context)


def _filed(found: Fact, filed: Record) -> str:
    """The flash after a challenge: filed, and what it does now (SPEC §6 rules 2, 3 and 6)."""
    effect = challenge_effects([filed])[filed.pk]
    return f"Challenge filed against {found}. {effect.reason}"


def _after_record(request: HtmxHttpRequest, found: Fact, message: str) -> HttpResponse:
    """htmx: the refreshed status panel and the message; otherwise post/redirect/get."""
    if request.htmx:
        messages.success(request, message)
        fresh = readable_fact(request.user, found.pk)
        context = _fact_context(request.user, fresh, pictures=False)
        return render(request, "console/fact.html#fact-status", context)
    return done(request, message, reverse("fact", args=[found.pk]))


def _refused_input(request: HtmxHttpRequest, found: Fact, key: Any, form: Form) -> HttpResponse:
    """The page (or, for htmx, the panel) again with the form's errors: a 400."""
    context = _fact_context(
        request.user,
        found,
        {key: form},
        queue=request.POST.get("queue"),
        pictures=not request.htmx,
    )
    template = "console/fact.html#fact-status" if request.htmx else "console/fact.html"
    return render(request, template, context, status=400)


@require_POST
@login_required
@refusals
def verdict(request: HtmxHttpRequest, fact_id: UUID) -> HttpResponse:
    found = readable_fact(request.user, fact_id)
    form = VerdictForm(request.POST)
    if form.is_valid():
        try:
            recorded = record_verdict(
                actor=request.user,
                fact_id=found.pk,
                verdict=form.cleaned_data["verdict"],
                ground=form.cleaned_data["ground"],
            )
        except Rejected as error:
            add_rejection(form, error)
        else:
            word = "Admitted" if form.cleaned_data["verdict"] == "admitted" else "Rejected"
            said = format_html(
                "{}: {}.{}",
                word,
                found,
                verdict_conflicts(recorded.closed, recorded.still_open, recorded.reopened),
            )
            queue = request.POST.get("queue")
            if queue is None:
                return _after_record(request, found, said)
            # Opened from the Candidates queue: on to its next candidate, same filters.
            to, more = next_candidate_url(request.user, queue)
            then = "Next candidate." if more else "Queue empty: no candidate left here."
            return done(request, format_html("{} {}", said, then), to)
    return _refused_input(request, found, "verdict", form)


@require_POST
@login_required
@refusals
def challenge(request: HtmxHttpRequest, fact_id: UUID) -> HttpResponse:
    found = readable_fact(request.user, fact_id)
    form = ChallengeForm(request.POST)
    if form.is_valid():
        try:
            filed = file_challenge(
                actor=request.user,
                fact_id=found.pk,
                ground=form.cleaned_data["ground"],
                evidence=form.cleaned_data["evidence"],
            )
        except Rejected as error:
            add_rejection(form, error)
        except ChallengeAlreadyOpen as error:
            # The whole page again, with what was typed and why it was refused.
            # htmx swaps no 409: the form on screen keeps what was typed, and
            # console.js reads the reason from this page into the status region.
            form.add_error(None, f"Not filed: {error}.")
            context = _fact_context(request.user, found, {"challenge": form})
            return render(request, "console/fact.html", context, status=409)
        else:
            return _after_record(request, found, _filed(found, filed))
    return _refused_input(request, found, "challenge", form)


@require_POST
@login_required
@refusals
def refute(request: HtmxHttpRequest, challenge_id: UUID) -> HttpResponse:
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
        Record.objects.challenges()
        .in_scopes(Scope.objects.visible_to(request.user))
        .filter(pk=challenge_id)
        .values_list("fact_id", flat=True)
        .first()
    )
    if target is None:
        raise NotFound("challenge")
    found = readable_fact(request.user, target)
    return _refused_input(request, found, ("refute", challenge_id), form)


@require_POST
@login_required
@refusals
def correct(request: HtmxHttpRequest, fact_id: UUID) -> HttpResponse:
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


# --- the subject page --------------------------------------------------------------------


@require_GET
@login_required
@refusals
def subject(request: HtmxHttpRequest, entity_id: int) -> HttpResponse:
    """What the store currently holds true about one entity, ranked (SPEC §5)."""
    entity = visible_entity(request.user, entity_id)
    now = timezone.now()
    merged_into = merge_target_id(entity.pk)
    truth = recall(viewer=request.user, scope=entity.scope, subject=entity.name, as_of=now)
    # Named with its scope (an entity's facts are all in its scope), so the
    # slot index (scope, subject, predicate) finds them: by subject alone
    # PostgreSQL skips through that index scope by scope.
    # The statuses rank the challenges of that scope alone, for the same reason.
    about = Fact.objects.readable_by(request.user).in_scope(entity.scope).filter(subject=entity)
    pending = (
        with_admission_status(about.live().with_disputed(), scopes=[entity.scope])
        .filter(Q(disputed=True) | Q(bucket=Bucket.SYSTEM) & ~Q(admission_status="admitted"))
        .for_display()
        .order_by("predicate__name", "recorded_at")[:100]
    )
    context = {
        "entity": entity,
        "now": now,
        "pictures": slot_pictures.subject_slots(
            slots_of_entity(viewer=request.user, entity=entity, per_slot=SUBJECT_SLOT_VERSIONS),
            now=now,
        ),
        "truth": truth,
        "pending": pending,
        "merged_into": visible_entity(request.user, merged_into) if merged_into else None,
        "merged_here": entity.merges_into.in_force().select_related("entity"),
        "slots": slot_panels(
            TruthSlot.objects.filter(scope_id=entity.scope_id, subject=entity)
            .select_related("predicate")
            .order_by("predicate__name")
        ),
    }
    return render(request, "console/subject.html", context)
