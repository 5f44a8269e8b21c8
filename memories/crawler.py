"""The maintenance crawler's shell: a deterministic, non-destructive pass (SPEC §8).

:func:`run_crawl` walks the system bucket's active facts slot by slot
(scope, subject, predicate, in that order), a chunk of slots at a time so
memory stays bounded on a large store. Each chunk is read set-wise: one
statement for the facts of its slots (a keyset read in slot order), one for
the conflicts of the facts whose slot weighs them
(``memories.core.crawl.weighs_conflicts``). The pure core
(``memories.core.crawl``) decides every slot on that read, with no lock.
Only the slots where something changes go further: a batch of them at a
time, the shell takes their slot locks (the write path's) in one statement,
reads those slots again under them, decides again on that read, and writes
the batch's effects with ``memories.apply.apply_many`` (the set-wise twin of
``apply``, in the one module where effects become rows), so a crawler change
is written, audited and closes moot conflicts exactly as the write path's
do. Each pass is stored as a :class:`~memories.models.CrawlerRun` with its
counts per action, which the health page shows.

The pass is idempotent: what it changed, it finds in order the next time
(superseded facts are closed, decayed ones marked, competing values share
the conflict it opened), so a second pass changes nothing, and costs the
reads and the decisions only: no lock, no transaction.
"""

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from itertools import batched, groupby
from operator import itemgetter
from uuid import UUID, uuid4

from django.conf import settings
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from memories.apply import apply_many
from memories.core.crawl import (
    ACTIONS,
    DecaySettings,
    SlotFact,
    SlotOutcome,
    crawl_slot,
    weighs_conflicts,
)
from memories.lookups import hot_cursor
from memories.models import Bucket, ConflictMember, CrawlerRun, Fact
from memories.slots import lock_slots
from memories.tasks import recompute_on_commit
from memories.vocabulary import LoadedVocabulary, load_vocabulary

Slot = tuple[int, int, int]  # scope, subject, predicate ids

# How many facts one read of the walk fetches: the walk holds one chunk of
# whole slots' facts at a time (or one slot, if a slot alone is larger),
# whatever the store's size.
CHUNK_FACTS = 5_000
# How many slots with changes one transaction locks, reads again and writes:
# a writer to one of them waits at most that long for its lock.
LOCKED_BATCH = 250

_FACTS = Fact._meta.db_table
_ACTIVE = (
    f"FROM {_FACTS} WHERE bucket = %s AND t_invalid IS NULL AND superseded_by_id IS NULL"
    # Not marked decayed, or reinforced since (memories.core.crawl.is_marked_decayed).
    " AND (decayed_at IS NULL OR decayed_at < last_reinforced_at)"
)
# The slot's three ids, then the columns of a SlotFact.
_COLUMNS = (
    "SELECT scope_id, subject_id, predicate_id, id, object_key, epistemic, source_type_id,"
    " confidence, statement, t_valid, last_reinforced_at, decayed_at, decay_reverted_at"
)
# The active facts after a slot key, in slot order (keyset, on the fact_slot index).
_NEXT_FACTS = (
    f"{_COLUMNS} {_ACTIVE} AND (scope_id, subject_id, predicate_id) > (%s, %s, %s)"
    " ORDER BY scope_id, subject_id, predicate_id LIMIT %s"
)
# The active facts of some slots, and maybe of a few more (the caller keeps its
# own): each of the three ids among the given, an index condition of fact_slot
# that never makes PostgreSQL scan the table, as a join to the list could.
_SLOTS_FACTS = (
    f"{_COLUMNS} {_ACTIVE} AND scope_id = ANY(%s::bigint[])"
    " AND subject_id = ANY(%s::bigint[]) AND predicate_id = ANY(%s::bigint[])"
)
_COUNT_SLOTS = (
    f"SELECT count(*) FROM (SELECT DISTINCT scope_id, subject_id, predicate_id {_ACTIVE}) AS s"
)

# The id a conflict would get in a decision taken only to see whether a slot
# changes: such a decision is never applied (the one under the lock is).
_UNWRITTEN = UUID(int=0)

Row = tuple  # a row of _NEXT_FACTS: the slot's three ids, then _COLUMNS
_slot_of = itemgetter(0, 1, 2)


def count_slots() -> int:
    """How many slots a pass would walk now (for a progress bar's total)."""
    with hot_cursor() as cursor:
        cursor.execute(_COUNT_SLOTS, [Bucket.SYSTEM])
        (count,) = cursor.fetchone()
    return count


def run_crawl(*, progress: Callable[[int], None] | None = None) -> CrawlerRun:
    """One pass over every active slot; the stored run with its counts per action.

    The run is stored when it starts (unfinished) and again when it ends, so
    a pass that fails midway is visible as one that did not finish.
    ``progress`` is called with the number of slots walked since its last call.
    """
    run = CrawlerRun.objects.create(started_at=timezone.now())
    vocab = load_vocabulary()
    decay = DecaySettings(
        threshold=settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD,
        half_life_days=settings.CLAIMGRAPH_HALF_LIFE_DAYS,
        floor=settings.CLAIMGRAPH_CONFIDENCE_FLOOR,
    )
    counts = dict.fromkeys(ACTIONS, 0)
    walked = changed = 0
    for chunk in _chunks():
        slots = _slot_facts(chunk, vocab)
        now = timezone.now()  # read after the chunk, as the write path reads it after its slot
        wanted = [
            slot
            for slot, facts in slots.items()
            if _decide(slot, facts, vocab, decay, now, _UNWRITTEN).effects.changes
        ]
        for batch in batched(wanted, LOCKED_BATCH):
            for outcome in _change(batch, vocab, decay):
                changed += 1
                for action, count in outcome.counts.items():
                    counts[action] += count
        walked += len(slots)
        if progress is not None:
            progress(len(slots))
    run.finished_at = timezone.now()
    run.counts = counts
    run.report = {
        "slots walked": walked,
        "slots changed": changed,
        "decay threshold": decay.threshold,
    }
    run.save(update_fields=["finished_at", "counts", "report"])
    return run


@task
def crawl_task() -> dict[str, int]:
    """The crawler's periodic pass (``memories.worker.PERIODIC_JOBS``): its counts per action."""
    return run_crawl().counts


def _chunks() -> Iterator[list[Row]]:
    """The active facts, whole slots at a time in slot order, about ``CHUNK_FACTS`` a read."""
    after: Slot = (0, 0, 0)
    while True:
        with hot_cursor() as cursor:
            cursor.execute(_NEXT_FACTS, [Bucket.SYSTEM, *after, CHUNK_FACTS], prepare=True)
            rows = cursor.fetchall()
        if not rows:
            return
        if len(rows) == CHUNK_FACTS:
            # The last slot may go on past the read: leave it for the next one.
            last = _slot_of(rows[-1])
            end = len(rows)
            while end and _slot_of(rows[end - 1]) == last:
                end -= 1
            rows = rows[:end] if end else _read_slots([last])
        yield rows
        after = _slot_of(rows[-1])


def _read_slots(slots: list[Slot]) -> list[Row]:
    """The active facts of these slots, in slot order."""
    wanted = set(slots)
    with hot_cursor() as cursor:
        cursor.execute(
            _SLOTS_FACTS,
            [Bucket.SYSTEM, *(sorted(set(ids)) for ids in zip(*slots, strict=True))],
        )
        rows = [row for row in cursor.fetchall() if _slot_of(row) in wanted]
    rows.sort(key=_slot_of)
    return rows


def _change(
    batch: Iterable[Slot], vocab: LoadedVocabulary, decay: DecaySettings
) -> list[SlotOutcome]:
    """Lock these slots, read and decide them again, apply what still changes. What was applied."""
    batch = list(batch)
    applied = []
    with transaction.atomic():
        lock_slots(
            (scope_id, subject_id, vocab.spec.slot_name(vocab.predicate_names[predicate_id]))
            for scope_id, subject_id, predicate_id in batch
        )
        # Read again under the locks: a writer may have changed the slots since.
        slots = _slot_facts(_read_slots(batch), vocab)
        now = timezone.now()
        for slot in batch:
            outcome = _decide(slot, slots.get(slot, []), vocab, decay, now, uuid4())
            if outcome.effects.changes:
                applied.append(outcome)
        # The slots are distinct and locked: their effects are written together.
        recompute_on_commit(apply_many(outcome.effects for outcome in applied).touched)
    return applied


def _decide(
    slot: Slot,
    facts: list[SlotFact],
    vocab: LoadedVocabulary,
    decay: DecaySettings,
    now: datetime,
    conflict_id: UUID,
) -> SlotOutcome:
    scope_id, subject_id, predicate_id = slot
    return crawl_slot(
        facts,
        vocab.spec,
        scope_id=scope_id,
        subject_id=subject_id,
        predicate_id=predicate_id,
        now=now,
        conflict_id=conflict_id,
        decay=decay,
    )


def _slot_facts(rows: list[Row], vocab: LoadedVocabulary) -> dict[Slot, list[SlotFact]]:
    """The rows of _NEXT_FACTS as each slot's facts, with their open and ruled conflicts.

    Slots of a predicate newer than this pass's vocabulary are left out.
    Conflicts are read (one query) only for the slots that weigh them.
    """
    grouped: dict[Slot, list[Row]] = {}
    for slot, slot_rows in groupby(rows, key=_slot_of):
        if slot[2] in vocab.predicate_names:
            grouped[slot] = list(slot_rows)
    weighed = [
        row[3]
        for slot, slot_rows in grouped.items()
        if weighs_conflicts(vocab.predicate_names[slot[2]], len(slot_rows), vocab.spec)
        for row in slot_rows
    ]
    ties = ConflictMember.objects.ties(weighed) if weighed else {}
    none: tuple[frozenset, frozenset] = (frozenset(), frozenset())
    sources = vocab.source_names
    slots = {}
    for slot, slot_rows in grouped.items():
        predicate = vocab.predicate_names[slot[2]]
        slots[slot] = [
            SlotFact(
                fact_id,
                predicate,
                object_key,
                epistemic,
                sources[source_type_id],
                confidence,
                statement,
                t_valid,
                last_reinforced_at,
                decayed_at,
                *ties.get(fact_id, none),  # open_conflicts, ruled_conflicts
                decay_reverted_at,
            )
            for (
                _,
                _,
                _,
                fact_id,
                object_key,
                epistemic,
                source_type_id,
                confidence,
                statement,
                t_valid,
                last_reinforced_at,
                decayed_at,
                decay_reverted_at,
            ) in slot_rows
        ]
    return slots
