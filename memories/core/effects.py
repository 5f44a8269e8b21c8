"""What a decision changes, as plain values, and the pure builders that say it.

Every writer of facts and conflicts (the actions, the import, background
maintenance) turns its decision into :class:`Effects` here and hands them to
``memories.store.apply``, which turns them into rows. So each rule's wording (the
audit rule, the moot reason) is written once, in this module, and both of
apply's back ends take the same values.

Pure: no Django, no clock, no randomness. Ids and instants are passed in.
The values are named tuples: the import builds several per line, and a tuple
is the cheapest frozen value to build.
"""

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple
from uuid import UUID

from memories.core.decisions import Decision, Evidence, Rejected, conflict_is_moot

# --- the rules' wording, once --------------------------------------------------------

SUPERSEDE_RULE = "write path: supersede"
MOOT_RULE = "moot: a side is no longer live"
LOOK_ALIKE_RULE = "names: a look-alike of an entity's name or alias is that entity (UTS #39)"
LOOK_ALIKE_REASON = "the name given looks like this entity's (same confusable skeleton)"
MOOT_REASON = "closed by itself: a side of it is no longer live"

SUPERSEDED = "superseded"
INVALIDATED = "invalidated"
WITHDRAWN = "withdrawn"
MOOT = "moot"
INCOMING = "incoming"
EXISTING = "existing"

RESOLUTIONS = {"keep": "kept", "coexist": "coexist", "dismiss": "dismissed"}


def write_path_rule(reason: str | None) -> str:
    """The audit rule of a conflict the write path opened for ``reason``."""
    return f"write path: {reason}"


# --- the effects -------------------------------------------------------------------


class NewFact(NamedTuple):
    """Every column of a fact to create, live unless ``t_invalid`` bounds it."""

    id: UUID
    scope_id: int
    subject_id: int
    predicate_id: int
    object_kind: str
    object_ref_id: int | None
    object_lit: str | None
    object_key: str
    epistemic: str
    source_type_id: int
    confidence: float
    episode: str
    statement: str
    evidence: tuple[Evidence, ...]
    author_id: int
    bucket: str
    t_valid: datetime
    t_invalid: datetime | None
    recorded_at: datetime
    last_reinforced_at: datetime


class Reinforce(NamedTuple):
    """A standing fact restated: its confidence, source and evidence after the restating."""

    fact_id: UUID
    confidence: float
    source_type_id: int
    evidence: tuple[Evidence, ...]
    last_reinforced_at: datetime


class CloseInterval(NamedTuple):
    """End a live fact's valid interval at ``at`` (recorded ``now``)."""

    fact_id: UUID
    at: datetime
    now: datetime
    kind: str  # superseded | invalidated | withdrawn
    reason: str
    superseded_by: UUID | None = None
    invalidated_by: int | None = None


class PointAt(NamedTuple):
    """A closed fact names the fact that replaced it (a correction, after its replacement)."""

    fact_id: UUID
    superseded_by: UUID


class MoveFact(NamedTuple):
    """A fact naming an entity merged away (subject or object) names the surviving one."""

    fact_id: UUID
    subject_id: int
    object_ref_id: int | None
    object_key: str


class MoveConflicts(NamedTuple):
    """The conflicts an entity merged away was the subject of now name the surviving one."""

    scope_id: int
    subject_id: int
    into_id: int


class Reopen(NamedTuple):
    """A closed fact reinstated (a withdrawal undoing a supersession): live again."""

    fact_id: UUID


class MarkDecayed(NamedTuple):
    """Annotate a live fact as decayed at ``at``: a mark for readers, not an invalidation."""

    fact_id: UUID
    at: datetime


class ClearDecay(NamedTuple):
    """A steward reverted a decay mark at ``at``: the mark is gone and remembered as reverted."""

    fact_id: UUID
    at: datetime


class Member(NamedTuple):
    fact_id: UUID
    role: str  # incoming | existing
    disputes: bool


class OpenConflict(NamedTuple):
    id: UUID
    kind: str
    scope_id: int
    subject_id: int
    predicate_id: int
    opened_at: datetime
    members: tuple[Member, ...]


class CloseConflict(NamedTuple):
    """Resolve an open conflict. ``kept``: the members kept, when the ruling names them."""

    id: UUID
    at: datetime
    resolution: str
    reason: str
    resolved_by: int | None = None
    kept: frozenset[UUID] | None = None


class ReopenConflict(NamedTuple):
    """A resolved conflict open again at ``at`` (a steward reverted its automatic resolution)."""

    id: UUID
    at: datetime


class AuditNote(NamedTuple):
    """One audit entry; ``actor_id`` None for an automatic change, which names its rule."""

    at: datetime
    scope_id: int
    action: str
    target_type: str
    target_id: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    reason: str
    rule: str
    actor_id: int | None


Change = (
    NewFact
    | MoveFact
    | MoveConflicts
    | Reinforce
    | CloseInterval
    | PointAt
    | Reopen
    | MarkDecayed
    | ClearDecay
    | OpenConflict
    | CloseConflict
    | ReopenConflict
    | AuditNote
)


class Effects(NamedTuple):
    """What one decision changes, in the order to apply it.

    ``check_moot``: facts that stopped being live, whose open conflicts may
    have closed by themselves; apply weighs them after the changes, at ``now``.
    """

    changes: tuple[Change, ...]
    check_moot: tuple[UUID, ...] = ()
    now: datetime | None = None


# --- builders ----------------------------------------------------------------------


def write_effects(
    decision: Decision,
    fact: NewFact,
    *,
    conflict_id: UUID | None,
    source_ids: Mapping[str, int],
) -> Effects:
    """The effects of a write-path decision on the incoming fact ``fact`` (SPEC §2, §3).

    ``fact`` carries the incoming assertion's resolved values with its id;
    its confidence is replaced by the decision's. A reinforcement touches
    the standing fact only; otherwise the superseded facts close at the new
    fact's t_valid, pointing at it, before it is inserted (an escalation
    restates the value the one-live-value index holds), a flagged write opens
    a conflict of the new fact against the candidates, and the superseded
    facts' conflicts are weighed for mootness.
    """
    now = fact.recorded_at
    actor_id = fact.author_id
    if decision.status == "reinforced":
        return reinforce_effects(decision, now=now, source_ids=source_ids)
    fact = fact._replace(confidence=decision.confidence)
    changes: list[Change] = [
        CloseInterval(old, fact.t_valid, now, SUPERSEDED, decision.rationale, fact.id, actor_id)
        for old in decision.supersedes
    ]
    changes.append(fact)
    if decision.status == "flagged":
        assert conflict_id is not None
        members = (
            Member(fact.id, INCOMING, True),
            *(Member(c, EXISTING, False) for c in decision.candidates),
        )
        changes.append(
            OpenConflict(
                conflict_id,
                decision.reason,
                fact.scope_id,
                fact.subject_id,
                fact.predicate_id,
                now,
                members,
            )
        )
        changes.append(
            AuditNote(
                now,
                fact.scope_id,
                "opened-conflict",
                "conflict",
                str(conflict_id),
                None,
                {
                    "kind": decision.reason,
                    "incoming": str(fact.id),
                    "candidates": [str(c) for c in decision.candidates],
                },
                decision.rationale,
                write_path_rule(decision.reason),
                actor_id,
            )
        )
    t_invalid = fact.t_valid.isoformat() if decision.supersedes else None
    for old in decision.supersedes:
        changes.append(
            AuditNote(
                now,
                fact.scope_id,
                "superseded",
                "fact",
                str(fact.id),
                {"fact": str(old), "t_invalid": None},
                {"fact": str(old), "t_invalid": t_invalid, "superseded_by": str(fact.id)},
                decision.rationale,
                SUPERSEDE_RULE,
                actor_id,
            )
        )
    return Effects(tuple(changes), tuple(decision.supersedes), now)


def move_effects(
    decision: Decision,
    fact: NewFact,
    *,
    conflict_id: UUID | None,
    source_ids: Mapping[str, int],
) -> Effects:
    """The effects of moving the existing ``fact`` to its new subject (an entity merge, §12).

    ``fact`` is the moved fact as it is, its ``subject_id`` the surviving
    entity's and its ``author_id`` the account merging; ``decision`` weighs it
    as the write path weighs an incoming fact. The effects are the write's
    (``write_effects``: supersessions closed first, a conflict opened with
    the moved fact as its incoming side), with the fact moved instead of
    inserted. A duplicate of a standing value is not kept twice (the
    one-live-value index): the standing fact is reinforced and the moved one
    closes, superseded by it, before it moves.
    """
    if decision.status == "reinforced":
        assert decision.reinforcement is not None
        now = fact.recorded_at
        closes = max(now, fact.t_valid + timedelta(microseconds=1))
        survivor = UUID(str(decision.reinforcement.fact_id))
        reinforced = reinforce_effects(decision, now=now, source_ids=source_ids)
        close = CloseInterval(
            fact.id, closes, now, SUPERSEDED, decision.rationale, survivor, fact.author_id
        )
        note = AuditNote(
            now,
            fact.scope_id,
            "superseded",
            "fact",
            str(survivor),
            {"fact": str(fact.id), "t_invalid": None},
            {"fact": str(fact.id), "t_invalid": closes.isoformat(), "superseded_by": str(survivor)},
            decision.rationale,
            SUPERSEDE_RULE,
            fact.author_id,
        )
        changes = (
            *reinforced.changes,
            close,
            MoveFact(fact.id, fact.subject_id, fact.object_ref_id, fact.object_key),
            note,
        )
        return Effects(changes, (fact.id,), now)
    written = write_effects(decision, fact, conflict_id=conflict_id, source_ids=source_ids)
    changes = tuple(
        MoveFact(fact.id, fact.subject_id, fact.object_ref_id, fact.object_key)
        if change is fact or type(change) is NewFact
        else change
        for change in written.changes
    )
    return written._replace(changes=changes)


class LookAlike(NamedTuple):
    """A name of an assertion that only its look resolved to an existing entity."""

    role: str  # "subject" or "object"
    given: str  # the spelling the writer gave
    entity_id: int
    entity_name: str  # the entity's own name, which the fact now names


def with_look_alikes(
    effects: Effects,
    look_alikes: Sequence[LookAlike],
    *,
    fact_id: UUID,
    scope_id: int,
    actor_id: int | None,
    at: datetime,
) -> Effects:
    """``effects`` with an audit entry for each look-alike name the write resolved.

    ``fact_id`` is the fact the write created, or the one it reinforced.
    """
    notes = tuple(
        AuditNote(
            at,
            scope_id,
            "resolved-name",
            "entity",
            str(alike.entity_id),
            None,
            {
                "entity": alike.entity_name,
                "given": alike.given,
                "role": alike.role,
                "fact": str(fact_id),
            },
            LOOK_ALIKE_REASON,
            LOOK_ALIKE_RULE,
            actor_id,
        )
        for alike in look_alikes
    )
    return effects._replace(changes=effects.changes + notes) if notes else effects


def reinforce_effects(
    decision: Decision, *, now: datetime, source_ids: Mapping[str, int]
) -> Effects:
    """A reinforcing decision's one effect: the standing fact restated at ``now``."""
    r = decision.reinforcement
    assert r is not None
    return Effects(
        (Reinforce(r.fact_id, r.confidence, source_ids[r.source_type], r.evidence, now),),
        now=now,
    )


def moot_effects(
    conflict_id: UUID, scope_id: int, members: Sequence[tuple[str, bool]], *, now: datetime
) -> tuple[Change, ...]:
    """Close an open conflict that no longer has two sides (SPEC §3); nothing if it has.

    ``members``: each member's (role, live) as it stands after the changes.
    """
    if not conflict_is_moot(members):
        return ()
    return (
        CloseConflict(conflict_id, now, MOOT, MOOT_REASON),
        AuditNote(
            now,
            scope_id,
            "closed-conflict",
            "conflict",
            str(conflict_id),
            {"status": "open"},
            {"status": "resolved", "resolution": MOOT},
            "",
            MOOT_RULE,
            None,
        ),
    )


def set_aside_effects(
    conflict_id: UUID,
    scope_id: int,
    members: Sequence[tuple[str, bool]],
    *,
    now: datetime,
    reason: str,
    actor_id: int,
    cause: Mapping[str, Any],
) -> tuple[Change, ...]:
    """Close an open conflict that a person's act left without two sides; nothing if it has two.

    ``members``: each member's (role, still a side): live, and not set aside
    by the act of a layer above (a steward's rejection of it, SPEC §6). The
    rule is :func:`~memories.core.decisions.conflict_is_moot`'s, as for a side
    that stopped being live; the closing differs from :func:`moot_effects` in
    whose it is: the person whose act set the side aside (``actor_id``),
    with their words (``reason``), so the audit feed lists it as their
    action and no revert of an automatic change can reopen it. ``cause``:
    what set the side aside, kept in the audit entry's after-state.
    """
    if not conflict_is_moot(members):
        return ()
    return (
        CloseConflict(conflict_id, now, MOOT, reason, resolved_by=actor_id),
        AuditNote(
            now,
            scope_id,
            "closed-conflict",
            "conflict",
            str(conflict_id),
            {"status": "open"},
            {"status": "resolved", "resolution": MOOT, **cause},
            reason,
            "",
            actor_id,
        ),
    )


def restore_effects(
    conflict_id: UUID,
    scope_id: int,
    members: Sequence[tuple[str, bool]],
    *,
    now: datetime,
    reason: str,
    actor_id: int,
    cause: Mapping[str, Any],
) -> tuple[Change, ...]:
    """Reopen a conflict :func:`set_aside_effects` closed, once it has two sides again.

    A person's act closed it (a steward rejected a side); another act of a
    person brought that side back (a later admission of it), so the
    question it asked is open again. ``members`` as for
    :func:`set_aside_effects`; nothing when it would still be moot.
    """
    if conflict_is_moot(members):
        return ()
    return (
        ReopenConflict(conflict_id, now),
        AuditNote(
            now,
            scope_id,
            "reopened-conflict",
            "conflict",
            str(conflict_id),
            {"status": "resolved", "resolution": MOOT},
            {"status": "open", **cause},
            reason,
            "",
            actor_id,
        ),
    )


def invalidation_effects(
    fact_id: UUID,
    scope_id: int,
    before: dict[str, Any],
    *,
    at: datetime,
    now: datetime,
    kind: str,
    reason: str,
    actor_id: int,
) -> Effects:
    """A human ends a live fact at ``at`` (SPEC §3). ``before``: its audit state now."""
    after = {
        **before,
        "t_invalid": at.astimezone(UTC).isoformat(),
        "invalidation_kind": kind,
        "superseded_by": None,
    }
    return Effects(
        (
            CloseInterval(fact_id, at, now, kind, reason, None, actor_id),
            AuditNote(
                now, scope_id, kind, "fact", str(fact_id), before, after, reason, "", actor_id
            ),
        ),
        (fact_id,),
        now,
    )


class MemberState(NamedTuple):
    fact_id: UUID
    live: bool
    t_valid: datetime


def resolution_effects(
    conflict_id: UUID,
    scope_id: int,
    members: Iterable[MemberState],
    *,
    action: str,
    keep: frozenset[UUID],
    reason: str,
    now: datetime,
    actor_id: int | None,
    rule: str = "",
) -> Effects:
    """A ruling on an open conflict (SPEC §3): keep, coexist or dismiss.

    A human's (``actor_id``), or an automatic one (``actor_id`` None) whose
    audit entry names its ``rule``. ``keep`` ends every live member not kept,
    now; raises :class:`Rejected` when one of them only becomes valid in the
    future.
    """
    ended: list[UUID] = []
    if action == "keep":
        for member in members:
            if member.fact_id not in keep and member.live:
                if now <= member.t_valid:
                    raise Rejected("keep", "a fact to end only becomes valid in the future")
                ended.append(member.fact_id)
    resolution = RESOLUTIONS[action]
    changes: list[Change] = [
        CloseInterval(fact_id, now, now, INVALIDATED, reason, None, actor_id) for fact_id in ended
    ]
    changes.append(
        CloseConflict(
            conflict_id, now, resolution, reason, actor_id, keep if action == "keep" else None
        )
    )
    changes.append(
        AuditNote(
            now,
            scope_id,
            "resolved-conflict",
            "conflict",
            str(conflict_id),
            {"status": "open"},
            {
                "status": "resolved",
                "resolution": resolution,
                "kept": sorted(str(fact_id) for fact_id in keep),
                "invalidated": sorted(str(fact_id) for fact_id in ended),
            },
            reason,
            rule,
            actor_id,
        )
    )
    return Effects(tuple(changes), tuple(ended), now)


class Withdrawn(NamedTuple):
    """One fact a withdrawal closes at ``at``, with its audit state before and after."""

    fact_id: UUID
    at: datetime
    before: dict[str, Any]
    after: dict[str, Any]


class Reinstated(NamedTuple):
    """One fact a withdrawal reopens, with its audit state before and after."""

    fact_id: UUID
    before: dict[str, Any]
    after: dict[str, Any]


def withdrawal_effects(
    withdrawal_id: Any,
    scope_id: int,
    *,
    episode: str,
    withdrawn: Sequence[Withdrawn],
    reinstated: Sequence[Reinstated],
    kept_closed: list[dict[str, str]],
    reason: str,
    now: datetime,
    actor_id: int,
) -> Effects:
    """A steward withdraws an episode (SPEC §12): its facts close, what they superseded reopens.

    The closings come first: reopening a fact whose value a withdrawn one
    restated (an escalation) needs the withdrawn one out of the live-value
    index. The withdrawn facts' conflicts are weighed for mootness.
    """
    changes: list[Change] = [
        CloseInterval(w.fact_id, w.at, now, WITHDRAWN, reason, None, actor_id) for w in withdrawn
    ]
    changes += [Reopen(r.fact_id) for r in reinstated]
    changes.append(
        AuditNote(
            now,
            scope_id,
            "withdrew-episode",
            "withdrawal",
            str(withdrawal_id),
            None,
            {
                "episode": episode,
                "withdrawn": [str(w.fact_id) for w in withdrawn],
                "reinstated": [str(r.fact_id) for r in reinstated],
                "kept_closed": kept_closed,
            },
            reason,
            "",
            actor_id,
        )
    )
    for action, entries in (("withdrawn", withdrawn), ("reinstated", reinstated)):
        changes += [
            AuditNote(
                now,
                scope_id,
                action,
                "fact",
                str(e.fact_id),
                e.before,
                e.after,
                reason,
                "",
                actor_id,
            )
            for e in entries
        ]
    return Effects(tuple(changes), tuple(w.fact_id for w in withdrawn), now)


def merge_effects(
    merge_id: int,
    scope_id: int,
    action: str,
    entity: str,
    *,
    was: str,
    now_resolves_to: str,
    reason: str,
    now: datetime,
    actor_id: int,
) -> Effects:
    """An entity merge recorded, or undone: what ``entity`` resolves to, before and after.

    No fact changes: a merge decides where later writes land, not what
    stands.
    """
    return Effects(
        (
            AuditNote(
                now,
                scope_id,
                action,
                "entitymerge",
                str(merge_id),
                {"entity": entity, "resolves_to": was},
                {"entity": entity, "resolves_to": now_resolves_to},
                reason,
                "",
                actor_id,
            ),
        ),
        now=now,
    )
