"""A steward's revert of an automatic change (SPEC §12): what it restores, as effects.

Pure: the shell (``memories.write.reverts``) reads the audit entry to revert and
the present state of what it touched, as plain values, and
:func:`revert_effects` returns the :class:`~memories.core.effects.Effects`
that restore the state before the change, with the revert's own audit
entry, or raises :class:`NotRevertible` saying why it cannot.

What "restore the prior state" means, by kind of change (:func:`revert_kind`),
in the order they are recognised:

1. *not automatic* (no rule): refused. A person's action is undone by
   another action of a person (a correction, a new ruling).
2. *supersession* (the write path's or the crawler's): the superseded fact
   reopens (its interval open again, ``superseded_by`` cleared). The newer
   fact is someone's assertion and stays. On a slot whose values compete
   (one-valued, not event-like), the reopened fact competes with *every*
   value live on the slot when the revert runs, not only with the newer
   fact: that one may have been superseded in turn (1, then 2, then 3:
   reverting 2's supersession of 1 puts 1 beside 3), or the slot may hold
   values written since. If any is live, one conflict of kind ``reverted``
   links the reopened fact with all of them, every member disputed: the
   revert picks no winner, a steward decides. It is a conflict of its own
   even where some of those values are already in one (as the write path
   opens one per flagged write): joined to a flagged write's conflict, the
   reopened fact would go free again when that conflict closes with its
   incoming side. Refused when the older fact is no longer closed by this
   supersession (someone changed it since) or its value is live again as
   another fact (the live-value index holds one).
3. *decay mark* (the crawler's): the mark is cleared and remembered as
   reverted, so the crawler does not mark the fact again until it is
   reinforced (``memories.core.crawl.decay_revert_holds``). Refused when the
   mark is not the one this change made (reinforced or marked again since).
4. *conflict opened by background work* (the crawler, truth maintenance):
   closed as ``dismissed`` by the steward with the revert's reason, which
   both read as a ruling (``memories.core.rulings``) and never reopen.
   Refused when it is no longer open. A conflict the *write path* opened is
   refused: its incoming fact exists because someone wrote it,
   and the question it asks is a steward's to rule on from its page.
5. *automatic resolution* (the judge's, truth maintenance's, a moot
   closing): the conflict reopens (remembered as reopened, so only a human
   rules on it from then on) and the facts that resolution ended reopen.
   Refused when the conflict was ruled on or reopened since, when an ended
   fact changed since, when its value is live again as another fact, or
   when the reopened conflict would lack a side (a moot closing whose side
   is still gone would close itself again at once).
6. anything else with a rule: refused, naming the action, until a revert
   for it is defined here.

One revert per change: the revert's audit entry targets the reverted entry,
and the database allows one such entry per target.
"""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple
from uuid import UUID

from memories.core.decisions import conflict_is_moot
from memories.core.effects import (
    EXISTING,
    INVALIDATED,
    SUPERSEDED,
    AuditNote,
    Change,
    ClearDecay,
    CloseConflict,
    Effects,
    Member,
    OpenConflict,
    Reopen,
    ReopenConflict,
    write_path_rule,
)

REVERTED = "reverted"
REVERT_TARGET = "auditentry"
REVERT_CONFLICT_KIND = "reverted"
# A crawler's conflict undone: closed as a steward's dismissal, which the
# crawler reads as a ruling and never reopens.
DISMISSED_BY_REVERT = "dismissed"

SUPERSESSION = "supersession"
DECAY = "decay"
OPENED_CONFLICT = "opened-conflict"
RESOLUTION = "resolution"
KINDS = (SUPERSESSION, DECAY, OPENED_CONFLICT, RESOLUTION)


class NotRevertible(Exception):
    """The change cannot be reverted now; the message says why (a 409 at the faces)."""


class Entry(NamedTuple):
    """The audit entry of the change to revert."""

    id: int
    at: datetime
    scope_id: int
    action: str
    target_type: str
    target_id: str
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    rule: str


class FactNow(NamedTuple):
    """A fact the change touched, as it stands now.

    ``twin_live``: another live fact holds its value where the live-value
    index counts it (same scope, subject, predicate, object and bucket, and
    author for a user fact).
    """

    id: UUID
    t_invalid: datetime | None
    invalidated_at: datetime | None
    invalidated_by: int | None
    invalidation_kind: str
    superseded_by: UUID | None
    decayed_at: datetime | None
    last_reinforced_at: datetime
    twin_live: bool = False

    @property
    def live(self) -> bool:
        return self.t_invalid is None


class ConflictNow(NamedTuple):
    """The conflict the change opened or resolved, as it stands now."""

    id: UUID
    subject_id: int
    predicate_id: int
    resolved_at: datetime | None
    resolved_by: int | None
    resolution: str
    members: tuple[tuple[UUID, str], ...]  # (fact id, role)


class Target(NamedTuple):
    """What the shell must read (and lock) for :func:`revert_effects`."""

    kind: str
    fact_ids: tuple[UUID, ...] = ()
    conflict_id: UUID | None = None


def revert_kind(entry: Entry) -> Target:
    """Which kind of change ``entry`` records and what it touched; refused if none applies."""
    after = entry.after or {}
    if not entry.rule:
        raise NotRevertible(
            "not an automatic change: only what the system did on its own is reverted"
        )
    try:
        if entry.action == SUPERSEDED:
            older = UUID(str(after.get("fact") or entry.target_id))
            return Target(SUPERSESSION, (older, UUID(str(after["superseded_by"]))))
        if entry.action == "decayed":
            return Target(DECAY, (UUID(entry.target_id),))
        if entry.action == "opened-conflict":
            if entry.rule.startswith(write_path_rule("")):
                raise NotRevertible(
                    "a conflict the write path opened holds someone's write in question:"
                    " rule on it from the conflict's page"
                )
            return Target(OPENED_CONFLICT, conflict_id=UUID(entry.target_id))
        if entry.action in ("resolved-conflict", "closed-conflict"):
            ended = tuple(UUID(str(fact_id)) for fact_id in after.get("invalidated", ()))
            return Target(RESOLUTION, ended, UUID(entry.target_id))
    except (KeyError, TypeError, ValueError):
        raise NotRevertible("the change's record does not say what it changed") from None
    raise NotRevertible(f"no revert is defined for a {entry.action!r} change")


def revert_effects(
    entry: Entry,
    target: Target,
    *,
    facts: Mapping[UUID, FactNow],
    conflict: ConflictNow | None,
    values_compete: bool,
    rivals: Sequence[UUID] = (),
    slot: tuple[int, int],
    new_conflict_id: UUID,
    reason: str,
    actor_id: int,
    now: datetime,
) -> Effects:
    """The effects that undo ``entry``'s change (rules in the module doc), with its record.

    ``facts``: every fact of ``target.fact_ids`` and every member of
    ``conflict`` as it stands; ``conflict``: ``target.conflict_id``'s;
    ``values_compete``: whether the slot holds one value at a time
    (one-valued, not event-like); ``rivals``: for a supersession, the facts
    live on the slot now besides the one it would reopen, in a stable order
    (read under the slot's lock); ``slot``: its (subject id, predicate id);
    ``new_conflict_id`` is used only if a conflict is opened.
    """
    if target.kind == SUPERSESSION:
        changes, before, after = _supersession(
            entry,
            target,
            facts,
            tuple(rivals) if values_compete else (),
            slot,
            new_conflict_id,
            now,
        )
    elif target.kind == DECAY:
        changes, before, after = _decay(entry, facts[target.fact_ids[0]], now)
    elif target.kind == OPENED_CONFLICT:
        changes, before, after = _opened_conflict(conflict, reason, actor_id, now)
    else:
        changes, before, after = _resolution(entry, target, facts, conflict, now)
    record = AuditNote(
        now,
        entry.scope_id,
        REVERTED,
        REVERT_TARGET,
        str(entry.id),
        {"kind": target.kind, "rule": entry.rule, **before},
        {"kind": target.kind, **after},
        reason,
        "",
        actor_id,
    )
    return Effects((*changes, record), now=now)


_Parts = tuple[list[Change], dict[str, Any], dict[str, Any]]


def _supersession(
    entry: Entry,
    target: Target,
    facts: Mapping[UUID, FactNow],
    competing: tuple[UUID, ...],
    slot: tuple[int, int],
    new_conflict_id: UUID,
    now: datetime,
) -> _Parts:
    older_id, newer_id = target.fact_ids
    older = facts[older_id]
    if older.live or older.invalidation_kind != SUPERSEDED or older.superseded_by != newer_id:
        raise NotRevertible(f"fact {older_id} is no longer closed by this supersession")
    if older.twin_live:
        raise NotRevertible(
            f"fact {older_id}'s value is live again as another fact: it cannot stand twice"
        )
    changes: list[Change] = [Reopen(older_id)]
    opened = None
    if competing:
        subject_id, predicate_id = slot
        opened = str(new_conflict_id)
        changes.append(
            OpenConflict(
                new_conflict_id,
                REVERT_CONFLICT_KIND,
                entry.scope_id,
                subject_id,
                predicate_id,
                now,
                tuple(Member(f, EXISTING, True) for f in (older_id, *competing)),
            )
        )
    before = {
        "fact": str(older_id),
        "t_invalid": _iso(older.t_invalid),
        "superseded_by": str(newer_id),
    }
    after = {
        "fact": str(older_id),
        "t_invalid": None,
        "superseded_by": None,
        "opened_conflict": opened,
    }
    return changes, before, after


def _decay(entry: Entry, fact: FactNow, now: datetime) -> _Parts:
    if fact.decayed_at != entry.at:
        raise NotRevertible(f"fact {fact.id} no longer carries this decay mark")
    if fact.last_reinforced_at > fact.decayed_at:
        raise NotRevertible(f"fact {fact.id} was reinforced since: the mark no longer holds")
    before = {"fact": str(fact.id), "decayed_at": _iso(fact.decayed_at)}
    after = {"fact": str(fact.id), "decayed_at": None, "decay_reverted_at": _iso(now)}
    return [ClearDecay(fact.id, now)], before, after


def _opened_conflict(
    conflict: ConflictNow | None, reason: str, actor_id: int, now: datetime
) -> _Parts:
    if conflict is None or conflict.resolved_at is not None:
        raise NotRevertible("the conflict is no longer open: a ruling on it stands")
    closing = CloseConflict(conflict.id, now, DISMISSED_BY_REVERT, reason, actor_id)
    before = {"conflict": str(conflict.id), "status": "open"}
    after = {"conflict": str(conflict.id), "status": "resolved", "resolution": DISMISSED_BY_REVERT}
    return [closing], before, after


def _resolution(
    entry: Entry,
    target: Target,
    facts: Mapping[UUID, FactNow],
    conflict: ConflictNow | None,
    now: datetime,
) -> _Parts:
    if conflict is None or conflict.resolved_at != entry.at or conflict.resolved_by is not None:
        raise NotRevertible("the conflict was ruled on or reopened since this resolution")
    for fact_id in target.fact_ids:
        fact = facts[fact_id]
        ended_here = (
            not fact.live
            and fact.invalidation_kind == INVALIDATED
            and fact.invalidated_at == entry.at
            and fact.invalidated_by is None
        )
        if not ended_here:
            raise NotRevertible(f"fact {fact_id} changed since this resolution ended it")
        if fact.twin_live:
            raise NotRevertible(
                f"fact {fact_id}'s value is live again as another fact: it cannot stand twice"
            )
    reopened = set(target.fact_ids)
    sides = [
        (role, fact_id in reopened or (fact_id in facts and facts[fact_id].live))
        for fact_id, role in conflict.members
    ]
    if conflict_is_moot(sides):
        raise NotRevertible(
            "a side of the conflict is still not live: reopened, it would close again by itself"
        )
    changes: list[Change] = [ReopenConflict(conflict.id, now)]
    changes += [Reopen(fact_id) for fact_id in target.fact_ids]
    before = {
        "conflict": str(conflict.id),
        "status": "resolved",
        "resolution": conflict.resolution,
        "invalidated": [str(f) for f in target.fact_ids],
    }
    after = {
        "conflict": str(conflict.id),
        "status": "open",
        "reopened": [str(f) for f in target.fact_ids],
    }
    return changes, before, after


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None
