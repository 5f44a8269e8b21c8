"""The maintenance crawler's shell: a deterministic, non-destructive pass (SPEC §8).

:func:`run_crawl` walks the system bucket's active facts slot by slot
(scope, subject, predicate, in that order), a chunk of slots at a time so
memory stays bounded on a large store. For each slot it asks the pure core
(``memories.core.crawl``) what to change on what it read; where something
changes it takes the write path's slot lock, reads the slot again under it,
decides again on that read, and applies the effects through
``memories.apply.apply``, the one place effects become rows, so a crawler
change is written, audited and closes moot conflicts exactly as the write
path's do. Each pass is stored as a :class:`~memories.models.CrawlerRun`
with its counts per action, which the health page shows.

The pass is idempotent: what it changed, it finds in order the next time
(superseded facts are closed, decayed ones marked, competing values share
the conflict it opened), so a second pass changes nothing.
"""

from collections.abc import Callable, Iterator
from uuid import uuid4

from django.conf import settings
from django.db import connection, transaction
from django.tasks import task
from django.utils import timezone

from memories.apply import apply
from memories.core.crawl import ACTIONS, DecaySettings, SlotFact, SlotOutcome, crawl_slot
from memories.models import Bucket, ConflictMember, CrawlerRun, Fact
from memories.slots import lock_slot
from memories.tasks import recompute_on_commit
from memories.vocabulary import LoadedVocabulary, load_vocabulary

Slot = tuple[int, int, int]  # scope, subject, predicate ids

# How many slots one read of the walk fetches: the walk holds one chunk of
# slot keys and one slot's facts at a time, whatever the store's size.
SLOT_CHUNK = 500

_ACTIVE = (
    f"FROM {Fact._meta.db_table} WHERE bucket = %s AND t_invalid IS NULL"
    " AND superseded_by_id IS NULL"
    # Not marked decayed, or reinforced since (memories.core.crawl.is_marked_decayed).
    " AND (decayed_at IS NULL OR decayed_at < last_reinforced_at)"
)
_NEXT_SLOTS = (
    f"SELECT DISTINCT scope_id, subject_id, predicate_id {_ACTIVE}"
    " AND (scope_id, subject_id, predicate_id) > (%s, %s, %s)"
    " ORDER BY scope_id, subject_id, predicate_id LIMIT %s"
)
_COUNT_SLOTS = (
    f"SELECT count(*) FROM (SELECT DISTINCT scope_id, subject_id, predicate_id {_ACTIVE}) AS s"
)


def count_slots() -> int:
    """How many slots a pass would walk now (for a progress bar's total)."""
    with connection.cursor() as cursor:
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
    for chunk in _slot_chunks():
        for slot in chunk:
            if slot[2] not in vocab.predicate_names:  # newer than this pass's vocabulary
                continue
            done = _crawl_one(slot, vocab, decay)
            if done is not None:
                changed += 1
                for action, count in done.counts.items():
                    counts[action] += count
        walked += len(chunk)
        if progress is not None:
            progress(len(chunk))
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


def _slot_chunks() -> Iterator[list[Slot]]:
    """The active slots in (scope, subject, predicate) order, a chunk at a time (keyset)."""
    after: Slot = (0, 0, 0)
    while True:
        with connection.cursor() as cursor:
            cursor.execute(_NEXT_SLOTS, [Bucket.SYSTEM, *after, SLOT_CHUNK])
            chunk = [tuple(row) for row in cursor.fetchall()]
        if not chunk:
            return
        yield chunk
        after = chunk[-1]


def _crawl_one(slot: Slot, vocab: LoadedVocabulary, decay: DecaySettings) -> SlotOutcome | None:
    """Decide one slot; if it changes, decide again under its lock and apply. What was applied."""
    if not _decide(slot, vocab, decay).effects.changes:
        return None
    scope_id, subject_id, predicate_id = slot
    with transaction.atomic():
        lock_slot(scope_id, subject_id, vocab.spec.slot_name(vocab.predicate_names[predicate_id]))
        # Read again under the lock: a writer may have changed the slot since.
        outcome = _decide(slot, vocab, decay)
        if not outcome.effects.changes:
            return None
        recompute_on_commit(apply(outcome.effects).touched)
    return outcome


def _decide(slot: Slot, vocab: LoadedVocabulary, decay: DecaySettings) -> SlotOutcome:
    scope_id, subject_id, predicate_id = slot
    facts = _slot_facts(slot, vocab)
    return crawl_slot(
        facts,
        vocab.spec,
        scope_id=scope_id,
        subject_id=subject_id,
        predicate_id=predicate_id,
        # Read after the slot's facts (under the lock, when locked), as the write path does.
        now=timezone.now(),
        conflict_id=uuid4(),
        decay=decay,
    )


def _slot_facts(slot: Slot, vocab: LoadedVocabulary) -> list[SlotFact]:
    """The slot's live, not superseded, system facts, each with its open and ruled conflicts."""
    scope_id, subject_id, predicate_id = slot
    rows = list(
        Fact.objects.filter(
            scope_id=scope_id,
            subject_id=subject_id,
            predicate_id=predicate_id,
            bucket=Bucket.SYSTEM,
            t_invalid__isnull=True,
            superseded_by__isnull=True,
        )
        .order_by("t_valid", "id")
        .values_list(
            "id",
            "object_key",
            "epistemic",
            "source_type_id",
            "confidence",
            "statement",
            "t_valid",
            "last_reinforced_at",
            "decayed_at",
            "decay_reverted_at",
        )
    )
    ties = ConflictMember.objects.ties(row[0] for row in rows)
    none: tuple[frozenset, frozenset] = (frozenset(), frozenset())
    predicate = vocab.predicate_names[predicate_id]
    return [
        SlotFact(
            id=fact_id,
            predicate=predicate,
            object_key=object_key,
            epistemic=epistemic,
            source_type=vocab.source_names[source_type_id],
            confidence=confidence,
            statement=statement,
            t_valid=t_valid,
            last_reinforced_at=last_reinforced_at,
            decayed_at=decayed_at,
            decay_reverted_at=decay_reverted_at,
            open_conflicts=ties.get(fact_id, none)[0],
            ruled_conflicts=ties.get(fact_id, none)[1],
        )
        for (
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
        ) in rows
    ]
