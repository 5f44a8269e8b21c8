"""A steward's own recent actions in words, for the dashboard ("Admitted shoply uses Redis").

The audit feed stores each action as a domain verb with its target's id and
a before/after of machine values; this turns one entry into a sentence and
a link to what it touched. The targets' names are read with the entries and
in one more query for the whole list, never one per entry.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.contrib.auth.models import User
from django.db.models import Case, OuterRef, Subquery, UUIDField, Value, When
from django.db.models.functions import Cast, Concat
from django.urls import reverse

from memories.models import AuditEntry, Conflict, Fact

NIL = UUID(int=0)

RESOLVED = {
    "kept": "kept one candidate",
    "coexist": "both stand",
    "dismissed": "dismissed",
    "moot": "closed as moot",
}


@dataclass(frozen=True)
class Activity:
    """One action said in words, with a link to its target (empty when it has no page)."""

    at: datetime
    scope: str
    text: str
    url: str = ""


def recent_activity(user: User, limit: int = 10) -> list[Activity]:
    """``user``'s last ``limit`` audit entries, newest first, each in words and linked."""
    # A conflict's name is read in the same query as the entries: the subquery
    # runs only for a conflict's entry, whose target id is a UUID.
    conflict_name = Conflict.objects.filter(pk=Cast(OuterRef("target_id"), UUIDField())).annotate(
        name=Concat("subject__name", Value(" "), "predicate__name")
    )
    entries = list(
        AuditEntry.objects.filter(actor=user)
        .select_related("scope")
        .annotate(
            conflict_name=Case(
                When(target_type="conflict", then=Subquery(conflict_name.values("name")[:1]))
            )
        )
        .order_by("-at", "-id")[:limit]
    )
    # The nil UUID names no row; with it the read is always one query, so the
    # page costs the same whatever kinds of action the list happens to hold.
    fact_ids = {_uuid(i) for entry in entries for i in _fact_ids(entry)} - {None} | {NIL}
    facts = Fact.objects.readable_by(user).for_display().in_bulk(fact_ids)
    return [_describe(entry, facts) for entry in entries]


def _describe(entry: AuditEntry, facts: dict) -> Activity:
    after = entry.after or {}
    before = entry.before or {}
    scope = entry.scope.name
    linked_facts = [facts[key] for key in map(_uuid, _fact_ids(entry)) if key in facts]
    fact = linked_facts[0] if linked_facts else None
    fact_url = reverse("fact", args=[fact.pk]) if fact else ""
    named = str(fact) if fact else "a fact"

    if entry.target_type == "conflict":
        named_conflict = getattr(entry, "conflict_name", None)
        url = reverse("conflict", args=[entry.target_id]) if named_conflict else ""
        on = f"the conflict on {named_conflict}" if named_conflict else "a conflict"
        if entry.action == "resolved-conflict":
            said = RESOLVED.get(after.get("resolution", ""), "resolved")
            return Activity(entry.at, scope, f"Resolved {on}: {said}", url)
        if entry.action == "opened-conflict":
            return Activity(entry.at, scope, f"Your write opened {on}", url)
        return Activity(entry.at, scope, f"{_verb(entry.action)} {on}", url)

    if entry.action == "recorded-verdict":
        verb = {"admitted": "Admitted", "rejected": "Rejected"}.get(after.get("verdict"), "Judged")
        return Activity(entry.at, scope, f"{verb} {named}", fact_url)
    if entry.action == "filed-challenge":
        return Activity(entry.at, scope, f"Challenged {named}", fact_url)
    if entry.action == "refuted-challenge":
        return Activity(entry.at, scope, f"Refuted a challenge on {named}", fact_url)
    if entry.action == "withdrew-episode":
        url = reverse("withdrawal", args=[entry.target_id])
        episode = after.get("episode") or before.get("episode") or "an episode"
        return Activity(entry.at, scope, f"Withdrew episode {episode}", url)
    if entry.action == "reported-outcome":
        count = len(after.get("facts") or [])
        text = f"Reported accepted work that used {count} fact{'' if count == 1 else 's'}"
        return Activity(entry.at, scope, text, fact_url)
    if entry.action in ("merged-entity", "unmerged-entity"):
        verb = "Merged" if entry.action == "merged-entity" else "Undid the merge of"
        text = f"{verb} {before.get('entity') or after.get('entity') or 'an entity'}"
        if entry.action == "merged-entity" and after.get("resolves_to"):
            text += f" into {after['resolves_to']}"
        return Activity(entry.at, scope, text, reverse("entities"))
    if entry.target_type == "fact":
        return Activity(entry.at, scope, f"{_verb(entry.action)} {named}", fact_url)
    return Activity(entry.at, scope, f"{_verb(entry.action)} {entry.target_type}", fact_url)


VERBS = {
    "withdrawn": "Withdrew",
    "superseded": "Your write superseded",
    "closed-conflict": "Closed",
}


def _verb(action: str) -> str:
    """A domain verb as a sentence's start: ``corrected-fact`` → ``Corrected``."""
    if action in VERBS:
        return VERBS[action]
    words = action.replace("-", " ").split()
    if len(words) > 1 and words[-1] in ("fact", "conflict", "entity", "episode"):
        words = words[:-1]
    return " ".join(words).capitalize() or "Changed"


def _fact_ids(entry: AuditEntry) -> Sequence[str]:
    """The facts an entry is about: its target, or the fact a record or an outcome names."""
    if entry.target_type == "fact":
        return [entry.target_id]
    after = entry.after or {}
    if entry.target_type == "record" and after.get("fact"):
        return [after["fact"]]
    if entry.target_type == "outcome":
        return list(after.get("facts") or [])
    return []


def _uuid(text: str) -> UUID | None:
    try:
        return UUID(str(text))
    except ValueError:
        return None
