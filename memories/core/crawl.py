"""The maintenance crawler's decision for one slot (SPEC §8).

Pure: the shell (``memories.maintenance.crawler``) passes one (scope, subject, predicate)
slot's live system facts as plain values, the vocabulary, ``now``, the decay
settings and the id a new conflict would get; :func:`crawl_slot` returns the
:class:`~memories.core.effects.Effects` to apply and the count of each action.

Three rules, none of which deletes or rewrites anything:

- *decayed*: a fact whose effective confidence at ``now`` is below the
  threshold is annotated as decayed. An annotation, not an invalidation: the
  fact stays live; it is no longer a candidate for the crawler. A mark a
  steward reverted is not made again until the fact is reinforced
  (:func:`decay_revert_holds`).
- *superseded* (an update cue): on a ``one`` predicate that is not event-like,
  when the newest value's statement carries an update cue ("actually",
  "now", "changed to", ...), each older value closes at the newer one's
  ``t_valid`` and points at it, but only where the write path itself could
  have superseded it: policy ``supersede``, no commitment on either side,
  the older fact's source not outranking the newer's, the older fact valid
  strictly before, and no human ruling (``memories.core.rulings``) nor open
  conflict between the two (a question a steward has, or has answered, is not
  settled by a cue), nor a human's ruling on either made after both were
  recorded (``rulings.left_for_a_human``: a revert put them side by side, say).
  The older closes no earlier than such a ruling made before.
  Recency alone never decides.
- *opened-conflict*: competing values left on such a slot that do not already
  share an open conflict are linked by a conflict of kind ``crawler``, with no
  incoming side, so every member is disputed (SPEC §2). A second run finds
  them sharing it and adds nothing. Values a human already ruled on together
  (``coexist``, ``dismissed``, ``kept``) count as linked: the crawler never
  reopens a question a steward has answered (``memories.core.rulings``, the
  rule truth maintenance follows too).

Invalidated, superseded and already decayed facts are skipped: the shell
passes live facts only, and this function drops the decayed ones. A mark
holds until the fact is reinforced (restated, or used in accepted work):
that resets the disuse clock, so the fact is a candidate again.
"""

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import combinations
from typing import NamedTuple
from uuid import UUID

from memories.core.confidence import effective_confidence, fact_decays
from memories.core.decisions import Vocabulary
from memories.core.effects import (
    EXISTING,
    SUPERSEDED,
    AuditNote,
    Change,
    CloseInterval,
    Effects,
    MarkDecayed,
    Member,
    OpenConflict,
)
from memories.core.rulings import left_for_a_human, linked, not_before_rulings

DECAYED = "decayed"
OPENED_CONFLICT = "opened-conflict"
ACTIONS = (SUPERSEDED, OPENED_CONFLICT, DECAYED)
CONFLICT_KIND = "crawler"

UPDATE_CUES = ("actually", "now", "changed to", "instead", "no longer", "switched to")
_CUE = re.compile(
    r"\b(?:" + "|".join(re.escape(cue).replace(r"\ ", r"\s+") for cue in UPDATE_CUES) + r")\b",
    re.IGNORECASE,
)


def crawler_rule(action: str) -> str:
    """The audit rule of a crawler change."""
    return f"crawler: {action}"


def has_update_cue(statement: str) -> bool:
    """Whether ``statement`` says it updates a value: a cue as a whole word, any case."""
    return _CUE.search(statement) is not None


def is_marked_decayed(decayed_at: datetime | None, last_reinforced_at: datetime) -> bool:
    """Whether a decay mark still holds: a reinforcement since the mark reset the clock."""
    return decayed_at is not None and decayed_at >= last_reinforced_at


def decay_revert_holds(decay_reverted_at: datetime | None, last_reinforced_at: datetime) -> bool:
    """Whether a steward's revert of a decay mark still keeps the crawler from marking again.

    It holds until the fact is reinforced after the revert: something new
    happened to it, and the disuse clock speaks again.
    """
    return decay_reverted_at is not None and decay_reverted_at >= last_reinforced_at


class SlotFact(NamedTuple):
    """One live fact of the slot as the crawler sees it.

    ``open_conflicts``: the ids of the open conflicts it is a member of;
    ``ruled_conflicts``: of the conflicts a steward ruled on
    (``memories.core.rulings.RULINGS``); ``ruled_at``: when a human last
    ruled on it (read only for a slot whose values compete, like the
    conflicts).
    """

    id: UUID
    predicate: str
    object_key: str
    epistemic: str
    source_type: str
    confidence: float
    statement: str
    t_valid: datetime
    recorded_at: datetime
    last_reinforced_at: datetime
    decayed_at: datetime | None
    open_conflicts: frozenset[UUID]
    ruled_conflicts: frozenset[UUID] = frozenset()
    decay_reverted_at: datetime | None = None
    # When a human last ruled on it (memories.core.rulings.left_for_a_human).
    ruled_at: datetime | None = None


class DecaySettings(NamedTuple):
    threshold: float
    half_life_days: float
    floor: float


class SlotOutcome(NamedTuple):
    effects: Effects
    counts: dict[str, int]


def crawl_slot(
    facts: Sequence[SlotFact],
    vocabulary: Vocabulary,
    *,
    scope_id: int,
    subject_id: int,
    predicate_id: int,
    now: datetime,
    conflict_id: UUID,
    decay: DecaySettings,
) -> SlotOutcome:
    """What the crawler changes on one slot (rules in the module doc); nothing if it is in order.

    ``facts`` are the slot's live system facts, all of one predicate.
    ``conflict_id`` is used only if a conflict is opened.
    """
    changes: list[Change] = []
    counts = dict.fromkeys(ACTIONS, 0)
    candidates = []
    # By valid time, then id (a UUID orders as its text does).
    for fact in sorted(facts, key=lambda f: (f.t_valid, f.id)):
        if is_marked_decayed(fact.decayed_at, fact.last_reinforced_at):
            continue
        source = vocabulary.sources[fact.source_type]
        reads = effective_confidence(
            fact.confidence,
            last_reinforced_at=fact.last_reinforced_at,
            at=now,
            decays=fact_decays(fact.epistemic, source.decays),
            half_life_days=decay.half_life_days,
            floor=decay.floor,
        )
        if reads < decay.threshold and not decay_revert_holds(
            fact.decay_reverted_at, fact.last_reinforced_at
        ):
            changes += _decayed(fact, reads, scope_id=scope_id, now=now, decay=decay)
            counts[DECAYED] += 1
        else:
            candidates.append(fact)

    superseded: list[UUID] = []
    if candidates and _values_compete(candidates[0].predicate, vocabulary):
        predicate = vocabulary.predicates[candidates[0].predicate]
        newest = candidates[-1]
        tied = len(candidates) > 1 and candidates[-2].t_valid == newest.t_valid
        if predicate.policy == "supersede" and not tied and has_update_cue(newest.statement):
            for older in candidates[:-1]:
                if (
                    _may_supersede(older, newest, vocabulary)
                    and not _linked(older, newest)
                    and not _left_for_a_human(older, newest)
                ):
                    changes += _superseded(older, newest, scope_id=scope_id, now=now)
                    superseded.append(older.id)
            counts[SUPERSEDED] = len(superseded)
        competing = [f for f in candidates if f.id not in superseded]
        unlinked = any(not _linked(a, b) for a, b in combinations(competing, 2))
        if len(competing) > 1 and unlinked:
            changes += _conflict(
                competing,
                conflict_id,
                scope_id=scope_id,
                subject_id=subject_id,
                predicate_id=predicate_id,
                now=now,
            )
            counts[OPENED_CONFLICT] = 1
    return SlotOutcome(Effects(tuple(changes), tuple(superseded), now), counts)


def weighs_conflicts(predicate: str, facts: int, vocabulary: Vocabulary) -> bool:
    """Whether :func:`crawl_slot` reads the conflicts of a slot's ``facts`` active facts.

    Only values that compete are weighed against each other, so only a slot
    of two or more of them: the shell loads conflicts for those slots alone.
    """
    return facts > 1 and _values_compete(predicate, vocabulary)


def _values_compete(predicate: str, vocabulary: Vocabulary) -> bool:
    spec = vocabulary.predicates[predicate]
    return spec.cardinality == "one" and not spec.event_like


def _linked(a: SlotFact, b: SlotFact) -> bool:
    """Whether two facts share an open conflict, or one a human ruled on."""
    return linked(a.open_conflicts, a.ruled_conflicts, b.open_conflicts, b.ruled_conflicts)


def _left_for_a_human(older: SlotFact, newer: SlotFact) -> bool:
    """Whether a human ruled on one of the two after both were recorded (``rulings``)."""
    return left_for_a_human((fact.recorded_at, fact.ruled_at) for fact in (older, newer))


def _may_supersede(older: SlotFact, newer: SlotFact, vocabulary: Vocabulary) -> bool:
    """Whether the write path could have superseded ``older`` with ``newer`` (SPEC §2)."""
    rank = vocabulary.sources
    return (
        older.epistemic != "commitment"
        and newer.epistemic != "commitment"
        and older.t_valid < newer.t_valid
        and rank[older.source_type].trust_rank <= rank[newer.source_type].trust_rank
    )


def _decayed(
    fact: SlotFact, reads: float, *, scope_id: int, now: datetime, decay: DecaySettings
) -> tuple[Change, ...]:
    return (
        MarkDecayed(fact.id, now),
        AuditNote(
            now,
            scope_id,
            DECAYED,
            "fact",
            str(fact.id),
            {"decayed_at": None},
            {"decayed_at": now.astimezone(UTC).isoformat(), "effective_confidence": reads},
            f"effective confidence {reads:.3f} below the threshold {decay.threshold:g}",
            crawler_rule(DECAYED),
            None,
        ),
    )


def _superseded(
    older: SlotFact, newer: SlotFact, *, scope_id: int, now: datetime
) -> tuple[Change, ...]:
    reason = "update cue in the newer value's statement"
    # Where the newer value began, unless a human ruled on the two later.
    at = not_before_rulings(newer.t_valid, (older.ruled_at, newer.ruled_at))
    return (
        CloseInterval(older.id, at, now, SUPERSEDED, reason, newer.id, None),
        AuditNote(
            now,
            scope_id,
            SUPERSEDED,
            "fact",
            str(older.id),
            {"t_invalid": None, "superseded_by": None},
            {
                "t_invalid": at.astimezone(UTC).isoformat(),
                "superseded_by": str(newer.id),
            },
            reason,
            crawler_rule(SUPERSEDED),
            None,
        ),
    )


def _conflict(
    members: Sequence[SlotFact],
    conflict_id: UUID,
    *,
    scope_id: int,
    subject_id: int,
    predicate_id: int,
    now: datetime,
) -> tuple[Change, ...]:
    return (
        OpenConflict(
            conflict_id,
            CONFLICT_KIND,
            scope_id,
            subject_id,
            predicate_id,
            now,
            tuple(Member(f.id, EXISTING, True) for f in members),
        ),
        AuditNote(
            now,
            scope_id,
            OPENED_CONFLICT,
            "conflict",
            str(conflict_id),
            None,
            {"kind": CONFLICT_KIND, "members": [str(f.id) for f in members]},
            "competing values without an update cue",
            crawler_rule(OPENED_CONFLICT),
            None,
        ),
    )
