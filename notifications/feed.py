"""The feed: each thing a steward should hear about, read once off what the domain records.

The write path writes nothing here. A pass (:func:`record_events`, the worker's
``notifications feed`` job) reads the records of the last
``CLAIMGRAPH_NOTIFY_LOOKBACK_HOURS`` that have no event yet and writes one
event for each, then hands the new events to every channel
(``notifications.channels.announce``) in the same transaction:

- an audit entry that opened a conflict (``conflict.opened``), filed a
  challenge (``challenge.filed``), or is an automatic change made by
  background work, with no person behind it (``change.automatic``);
- a refutation record, from a refuted challenge or a correction
  (``challenge.settled``, addressed to the challenger as well);
- a candidate, a live system fact without a verdict (``candidate.waiting``).

Why a lookback rather than a cursor: ids and times are taken before a
transaction commits, so a record committed late can carry an id or a time
below one a pass has already seen. Reading again every record of the window
that has no event (an anti-join on ``Event.source``, which is unique) misses
nothing committed within the window, and ``Event.objects.record`` never
writes an event twice, whichever worker gets there first.
A pass writes at most ``BATCH`` events of each source; the rest wait for the
next pass, oldest first.
"""

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import CharField, Exists, OuterRef, Prefetch, Q, QuerySet, Value
from django.db.models.functions import Cast, Concat
from django.tasks import task
from django.utils import timezone

from admissions.models import Record, Role
from admissions.selectors import candidates
from memories.store.models import AuditEntry, Conflict, ConflictMember, Fact, Scope
from notifications.channels import announce
from notifications.links import console_url, fact_side, item, scope_of
from notifications.models import Event, EventKind

# The most events of one source a pass writes.
BATCH = 500

OPENED_CONFLICT = "opened-conflict"
FILED_CHALLENGE = "filed-challenge"
_SUSPENDED = "suspended"
# Entries without an actor that still record a person's act (stewardship
# granted on the admin's pages, say): no background work made them.
_PEOPLE_S_ACTS = ("made-steward", "revoked-steward", "granted-scope")


@task
def record_events_task() -> dict[str, int]:
    """The worker's ``notifications feed`` job: one pass, its counts per kind."""
    return record_events(now=timezone.now())


def record_events(*, now: datetime) -> dict[str, int]:
    """One pass: the events not yet written for the window before ``now``, announced."""
    since = now - timedelta(hours=settings.CLAIMGRAPH_NOTIFY_LOOKBACK_HOURS)
    with transaction.atomic():
        events = [
            *_from_audit(_unannounced(_announced_entries().filter(at__gte=since), "audit", "at")),
            *_from_refutations(
                _unannounced(
                    Record.objects.filter(role=Role.REFUTATION, inserted_at__gte=since),
                    "record",
                    "inserted_at",
                )
            ),
            *_from_candidates(
                _unannounced(
                    candidates(Scope.objects.values("pk")).filter(recorded_at__gte=since),
                    "candidate",
                    "recorded_at",
                )
            ),
        ]
        written = Event.objects.record(events)
        announce(written)
    counts = dict.fromkeys(EventKind.values, 0)
    for event in written:
        counts[event.kind] += 1
    return {kind: count for kind, count in counts.items() if count}


def _unannounced(rows: QuerySet, prefix: str, at: str) -> list:
    """The ids of the oldest ``BATCH`` of ``rows`` with no event whose source is ``prefix:<pk>``.

    Ids alone: a pass that finds nothing (the usual one) plans and runs three
    small statements, and the rows it does find are loaded with what their
    events say in a statement each.
    """
    source = Concat(Value(f"{prefix}:"), Cast(OuterRef("pk"), CharField()))
    unannounced = rows.filter(~Exists(Event.objects.filter(source=source))).order_by(at, "pk")
    return list(unannounced.values_list("pk", flat=True)[:BATCH])


# --- audit entries ----------------------------------------------------------------------


def _announced_entries() -> QuerySet[AuditEntry]:
    """The audit entries an event tells of: conflicts opened, challenges filed, background work."""
    background = AuditEntry.objects.automatic().filter(actor__isnull=True)
    return AuditEntry.objects.filter(
        action__in=(OPENED_CONFLICT, FILED_CHALLENGE)
    ) | background.exclude(action__in=_PEOPLE_S_ACTS)


def _from_audit(ids: list[int]) -> list[Event]:
    if not ids:
        return []
    entries = list(
        AuditEntry.objects.filter(pk__in=ids).select_related("scope").order_by("at", "pk")
    )
    conflicts = _conflicts([e.target_id for e in entries if e.action == OPENED_CONFLICT])
    challenges = _records([e.target_id for e in entries if e.action == FILED_CHALLENGE])
    events = []
    for entry in entries:
        if entry.action == OPENED_CONFLICT:
            conflict = conflicts.get(entry.target_id)
            if conflict is not None:
                events.append(_conflict_opened(entry, conflict))
        elif entry.action == FILED_CHALLENGE:
            challenge = challenges.get(entry.target_id)
            if challenge is not None:
                events.append(_challenge_filed(entry, challenge))
        else:
            events.append(_automatic_change(entry))
    return events


def _conflicts(ids: Iterable[str]) -> dict[str, Conflict]:
    members = ConflictMember.objects.select_related(
        "fact__subject", "fact__predicate", "fact__object_ref", "fact__source_type"
    ).order_by("-disputes", "fact__recorded_at", "fact_id")
    found = (
        Conflict.objects.filter(pk__in=list(ids))
        .select_related("scope", "subject", "predicate")
        .prefetch_related(Prefetch("members", queryset=members))
    )
    return {str(conflict.pk): conflict for conflict in found}


def _records(ids: Iterable[str]) -> dict[str, Record]:
    found = Record.objects.filter(pk__in=list(ids)).select_related(
        "author",
        "fact__subject",
        "fact__predicate",
        "fact__object_ref",
        "fact__source_type",
    )
    return {str(record.pk): record for record in found}


def _conflict_opened(entry: AuditEntry, conflict: Conflict) -> Event:
    title = f"{conflict.subject.name} {conflict.predicate.name}"
    sides = [fact_side(member.fact, role=member.role) for member in conflict.members.all()]
    values = " against ".join(f"{side['value']} ({side['source_type']})" for side in sides)
    return _event(
        EventKind.CONFLICT_OPENED,
        scope=entry.scope,
        source=f"audit:{entry.pk}",
        occurred_at=conflict.opened_at,
        summary=f"Conflict opened in {entry.scope.name} on {title}: {values}",
        about=item(
            "conflict", str(conflict.pk), title, console_url("conflict", conflict_id=conflict.pk)
        ),
        sides=sides,
        conflict_kind=conflict.kind,
        rule=entry.rule,
    )


def _challenge_filed(entry: AuditEntry, challenge: Record) -> Event:
    fact = challenge.fact
    suspended = (entry.after or {}).get("status") == _SUSPENDED
    effect = "the fact is suspended" if suspended else "the fact is not suspended"
    return _event(
        EventKind.CHALLENGE_FILED,
        scope=entry.scope,
        source=f"audit:{entry.pk}",
        occurred_at=challenge.inserted_at,
        summary=(
            f"{challenge.author.username} challenged {fact} in {entry.scope.name}"
            f"{' with evidence' if challenge.evidence else ''}: {effect}"
        ),
        about=item("challenge", str(challenge.pk), str(fact), console_url("fact", fact_id=fact.pk)),
        sides=[fact_side(fact, role="challenged")],
        challenger=challenge.author.username,
        ground=challenge.ground,
        evidence=challenge.evidence or [],
        suspended=suspended,
    )


def _automatic_change(entry: AuditEntry) -> Event:
    change = item(
        "change",
        str(entry.pk),
        f"{entry.action} {entry.target_type} {entry.target_id}",
        console_url("changes"),
    )
    return _event(
        EventKind.CHANGE_AUTOMATIC,
        scope=entry.scope,
        source=f"audit:{entry.pk}",
        occurred_at=entry.at,
        summary=f"Automatic change in {entry.scope.name}: {entry.action}, by {entry.rule}",
        about=change,
        sides=[],
        action=entry.action,
        rule=entry.rule,
        reason=entry.reason,
        target={"type": entry.target_type, "id": entry.target_id},
    )


def _event(
    kind: EventKind,
    *,
    scope: Scope,
    source: str,
    occurred_at: datetime,
    summary: str,
    about: dict,
    sides: list,
    addressee=None,
    **more: Any,
) -> Event:
    """An event of ``scope`` read off ``source``, its data in the documented shape."""
    return Event(
        kind=kind,
        scope=scope,
        addressee=addressee,
        occurred_at=occurred_at,
        source=source,
        data={"summary": summary, "scope": scope_of(scope), "item": about, "sides": sides, **more},
    )


# --- refutations: a challenge settled ---------------------------------------------------


def _from_refutations(ids: list) -> list[Event]:
    if not ids:
        return []
    found = (
        Record.objects.filter(pk__in=ids)
        .select_related(
            "scope",
            "author",
            "challenge__author",
            "fact__subject",
            "fact__predicate",
            "fact__object_ref",
            "fact__source_type",
        )
        .annotate(corrected=Q(fact__superseded_by__isnull=False) | Q(fact__t_invalid__isnull=False))
    )
    return [_challenge_settled(refutation) for refutation in found.order_by("inserted_at", "pk")]


def _challenge_settled(refutation: Record) -> Event:
    challenge, fact = refutation.challenge, refutation.fact
    outcome = "corrected" if refutation.corrected else "refuted"
    said = "corrected the fact" if refutation.corrected else "refuted the challenge"
    return _event(
        EventKind.CHALLENGE_SETTLED,
        scope=refutation.scope,
        source=f"record:{refutation.pk}",
        addressee=challenge.author,
        occurred_at=refutation.inserted_at,
        summary=(
            f"{refutation.author.username} {said} on {challenge.author.username}'s "
            f"challenge of {fact} in {refutation.scope.name}"
        ),
        about=item("challenge", str(challenge.pk), str(fact), console_url("fact", fact_id=fact.pk)),
        sides=[fact_side(fact, role="challenged")],
        outcome=outcome,
        challenger=challenge.author.username,
        steward=refutation.author.username,
        ground=refutation.ground,
    )


# --- candidates -------------------------------------------------------------------------


def _from_candidates(ids: list) -> list[Event]:
    if not ids:
        return []
    facts = Fact.objects.filter(pk__in=ids).for_display().order_by("recorded_at", "pk")
    return [_candidate_waiting(fact) for fact in facts]


def _candidate_waiting(fact: Fact) -> Event:
    return _event(
        EventKind.CANDIDATE_WAITING,
        scope=fact.scope,
        source=f"candidate:{fact.pk}",
        occurred_at=fact.recorded_at,
        summary=(
            f"Candidate waiting for a verdict in {fact.scope.name}: {fact}"
            f" ({fact.source_type.name}, by {fact.author.username})"
        ),
        about=item("fact", str(fact.pk), str(fact), console_url("fact", fact_id=fact.pk)),
        sides=[fact_side(fact, role="candidate")],
        author=fact.author.username,
    )
