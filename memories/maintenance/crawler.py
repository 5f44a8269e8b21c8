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
the batch's effects with ``memories.store.apply.do_apply_many`` (the set-wise twin of
``do_apply``, in the one module where effects become rows), so a crawler change
is written, audited and closes moot conflicts exactly as the write path's
do. Each pass is stored as a :class:`~memories.store.models.CrawlerRun` with its
counts per action, which the health page shows.

The pass is idempotent: what it changed, it finds in order the next time
(superseded facts are closed, decayed ones marked, competing values share
the conflict it opened), so a second pass changes nothing. It walks less,
too: a pass that builds on a finished one walks only the slots where
something may have changed since that one started (rows written since its
transaction watermark, decay crossing the threshold since its start), on
the same vocabulary, settings and database; docs/background.md says why
that is enough and when a pass is full instead.
"""

import hashlib
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from itertools import batched, groupby
from operator import itemgetter
from uuid import UUID, uuid4

from django.conf import settings
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from memories.core.crawl import (
    ACTIONS,
    DecaySettings,
    SlotFact,
    SlotOutcome,
    crawl_slot,
    weighs_conflicts,
)
from memories.store.apply import do_apply_many
from memories.store.lookups import hot_cursor
from memories.store.models import Bucket, Conflict, ConflictMember, CrawlerRun, Fact
from memories.store.slots import lock_slots
from memories.store.touched import recompute_on_commit
from memories.store.vocabulary import LoadedVocabulary, load_vocabulary

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
    " confidence, statement, t_valid, recorded_at, last_reinforced_at, decayed_at,"
    " decay_reverted_at"
)
# The active facts after a slot key, in slot order (keyset, on the fact_slot index).
_NEXT_FACTS = (
    f"{_COLUMNS} {_ACTIVE} AND (scope_id, subject_id, predicate_id) > (%s, %s, %s)"
    " ORDER BY scope_id, subject_id, predicate_id LIMIT %s"
)
# The active facts of the named slots, in slot order. OFFSET 0 keeps the
# subquery a subquery: PostgreSQL runs it once per slot on the slot index,
# where a plain join to the list may be planned as a scan of the whole table.
_SLOTS_FACTS = (
    "SELECT slot.scope_id, slot.subject_id, slot.predicate_id, f.*"
    " FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[])"
    "   AS slot(scope_id, subject_id, predicate_id)"
    " CROSS JOIN LATERAL ("
    f"   SELECT {_COLUMNS.removeprefix('SELECT scope_id, subject_id, predicate_id, ')}"
    f"   {_ACTIVE} AND scope_id = slot.scope_id AND subject_id = slot.subject_id"
    "    AND predicate_id = slot.predicate_id OFFSET 0) AS f"
    " ORDER BY slot.scope_id, slot.subject_id, slot.predicate_id"
)
# Whether a row was written by a transaction not older than the watermark:
# its 32-bit xmin within the span of transaction ids from the watermark to
# now (modulo 2^32). A row so old that its id wrapped around may count as
# written since: a slot walked for nothing, never one missed.
_WRITTEN_SINCE = "(({t}xmin::text::bigint - %(x32)s + 4294967296) %% 4294967296) < %(span)s"
# The slots where something may have changed since a finished pass
# (memories.maintenance.crawler's doc, docs/background.md): a system fact written since
# its watermark, or whose decay crosses the threshold between its start and
# now (a window wider than the pure rule's, so rounding never misses one); a
# conflict or membership written since, by its members' slots.
_CHANGED_SLOTS = (
    f"SELECT scope_id, subject_id, predicate_id FROM {_FACTS}"
    f" WHERE bucket = %(bucket)s AND ({_WRITTEN_SINCE.format(t='')}"
    "   OR (%(threshold)s > 0 AND confidence > 0 AND last_reinforced_at"
    "       + make_interval(secs => %(half_life)s * ln(confidence / %(threshold)s) / ln(2))"
    "       BETWEEN %(from)s AND %(until)s))"
    " UNION"
    f" SELECT f.scope_id, f.subject_id, f.predicate_id FROM {ConflictMember._meta.db_table} AS m"
    f" JOIN {Conflict._meta.db_table} AS c ON c.id = m.conflict_id"
    f" JOIN {_FACTS} AS f ON f.id = m.fact_id"
    f" WHERE {_WRITTEN_SINCE.format(t='c.')} OR {_WRITTEN_SINCE.format(t='m.')}"
    " ORDER BY 1, 2, 3"
)
# The next transaction id to come (64 bits), and which database this is.
_NEXT_TRANSACTION = (
    "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint,"
    " (SELECT system_identifier FROM pg_control_system())::text || '/'"
    "   || (SELECT oid FROM pg_database WHERE datname = current_database())::text"
)
# A pass's watermark, read after _NEXT_TRANSACTION: the oldest transaction
# that has written in this database and may not have committed (a running
# one's, or a prepared one's, widened to 64 bits below %(next)s), else the
# next one. Every row written by a later commit has an id from there on, a
# subtransaction's too (it comes after its parent's). Only this database's
# writers count: a long transaction elsewhere on the server cannot write here.
_WATERMARK = (
    "SELECT coalesce(min(%(next)s - ((%(next)s - xid::text::bigint) %% 4294967296)), %(next)s)"
    " FROM (SELECT backend_xid AS xid FROM pg_stat_activity"
    "        WHERE datname = current_database() AND backend_xid IS NOT NULL"
    "       UNION ALL SELECT transaction FROM pg_prepared_xacts"
    "        WHERE database = current_database()) AS writers"
)
# How many changed slots one read of an incremental pass fetches the facts of.
CHANGED_CHUNK = 1_000
# An incremental pass builds on the last finished one; a full pass at least this often.
FULL_PASS_EVERY = timedelta(days=1)

_COUNT_SLOTS = (
    f"SELECT count(*) FROM (SELECT DISTINCT scope_id, subject_id, predicate_id {_ACTIVE}) AS s"
)

# The id a conflict would get in a decision taken only to see whether a slot
# changes: such a decision is never applied (the one under the lock is).
_UNWRITTEN = UUID(int=0)

Row = tuple  # a row of _NEXT_FACTS: the slot's three ids, then _COLUMNS
_slot_of = itemgetter(0, 1, 2)


def count_slots() -> int:
    """How many slots a full pass would walk now (for a progress bar's total)."""
    with hot_cursor() as cursor:
        cursor.execute(_COUNT_SLOTS, [Bucket.SYSTEM])
        (count,) = cursor.fetchone()
    return count


def run_crawl(*, progress: Callable[[int], None] | None = None, full: bool = False) -> CrawlerRun:
    """One pass over every slot that may need it; the stored run with its counts per action.

    After a finished pass on the same vocabulary and settings (and a full
    one within ``FULL_PASS_EVERY``), the pass is incremental: it walks only
    the slots where something may have changed since that pass started
    (:data:`_CHANGED_SLOTS`); otherwise, or with ``full``, every active slot.
    The run is stored when it starts (unfinished) and again when it ends, so
    a pass that fails midway is visible as one that did not finish, and is
    never built on. ``progress`` is called with the number of slots walked
    since its last call.
    """
    run = CrawlerRun.objects.create(started_at=timezone.now())
    next_id, database, watermark = _transactions()
    vocab = load_vocabulary()
    decay = DecaySettings(
        threshold=settings.CLAIMGRAPH_CRAWLER_DECAY_THRESHOLD,
        half_life_days=settings.CLAIMGRAPH_HALF_LIFE_DAYS,
        floor=settings.CLAIMGRAPH_CONFIDENCE_FLOOR,
    )
    basis = _basis(vocab, decay, database)
    previous = None if full else _previous(basis, run)
    if previous is None:
        chunks, walk = _chunks(), "full"
    else:
        chunks = _changed_chunks(previous, next_id, run.started_at, decay)
        walk = f"since run {previous.pk}"
    counts = dict.fromkeys(ACTIONS, 0)
    walked = changed = 0
    for chunk in chunks:
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
        "walk": walk,
        "watermark": watermark,
        "basis": basis,
        # When the last full pass started, that this one builds on (or this one).
        "full pass": (
            run.started_at.isoformat() if previous is None else previous.report["full pass"]
        ),
    }
    run.save(update_fields=["finished_at", "counts", "report"])
    return run


@task
def crawl_task() -> dict[str, int]:
    """The crawler's periodic pass (``memories.maintenance.worker.PERIODIC_JOBS``): its counts."""
    return run_crawl().counts


def _transactions() -> tuple[int, str, int]:
    """The next transaction id, the database, and the watermark (:data:`_WATERMARK`)."""
    with hot_cursor() as cursor:
        cursor.execute(_NEXT_TRANSACTION)
        next_id, database = cursor.fetchone()
        # In a statement of its own, after: a writer that gets its id in between
        # has one past next_id.
        cursor.execute(_WATERMARK, {"next": next_id})
        (watermark,) = cursor.fetchone()
    return next_id, database, watermark


def _basis(vocab: LoadedVocabulary, decay: DecaySettings, database: str) -> str:
    """A digest of what a pass decides on besides the rows and the clock.

    The vocabulary (predicates, sources, their ids), the decay settings and
    the database itself (a restored copy has other transaction ids): a pass
    builds on an earlier one only if its basis is the same.
    """
    spec = vocab.spec
    parts = (
        sorted(spec.predicates.items()),
        sorted(spec.sources.items()),
        sorted(vocab.predicate_names.items()),
        sorted(vocab.source_names.items()),
        tuple(decay),
        database,
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _previous(basis: str, run: CrawlerRun) -> CrawlerRun | None:
    """The finished pass this one may build on: the latest, if its basis is this one's."""
    latest = CrawlerRun.objects.exclude(pk=run.pk).filter(finished_at__isnull=False).first()
    if latest is None or latest.report.get("basis") != basis:
        return None
    full_pass = latest.report.get("full pass")
    if full_pass is None or datetime.fromisoformat(full_pass) < run.started_at - FULL_PASS_EVERY:
        return None
    return latest


def _changed_chunks(
    previous: CrawlerRun, next_id: int, now: datetime, decay: DecaySettings
) -> Iterator[list[Row]]:
    """The active facts of the slots that may have changed since ``previous`` started."""
    watermark = previous.report["watermark"]
    with hot_cursor() as cursor:
        cursor.execute(
            _CHANGED_SLOTS,
            {
                "bucket": Bucket.SYSTEM,
                "x32": watermark % 2**32,
                "span": next_id - watermark,
                "threshold": decay.threshold,
                "half_life": decay.half_life_days * 86_400,
                # A day either side: the SQL's rounding is not the pure rule's.
                "from": previous.started_at - timedelta(days=1),
                "until": now + timedelta(days=1),
            },
        )
        slots = [tuple(row) for row in cursor.fetchall()]
    for chunk in batched(slots, CHANGED_CHUNK):
        yield _read_slots(list(chunk))


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
    with hot_cursor() as cursor:
        cursor.execute(
            _SLOTS_FACTS, [*(list(ids) for ids in zip(*slots, strict=True)), Bucket.SYSTEM]
        )
        return cursor.fetchall()


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
        recompute_on_commit(do_apply_many(outcome.effects for outcome in applied).touched)
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
    Conflicts, and when a human last ruled on each fact, are read (a query
    each) only for the slots that weigh them.
    """
    grouped: dict[Slot, list[Row]] = {}
    for slot, slot_rows in groupby(rows, key=_slot_of):
        if slot[2] in vocab.predicate_names:
            grouped[slot] = list(slot_rows)
    weighed_rows = [
        row
        for slot, slot_rows in grouped.items()
        if weighs_conflicts(vocab.predicate_names[slot[2]], len(slot_rows), vocab.spec)
        for row in slot_rows
    ]
    weighed = [row[3] for row in weighed_rows]
    ties = ConflictMember.objects.ties(weighed) if weighed else {}
    ruled_at = (
        ConflictMember.objects.ruled_at(weighed, scope_ids={row[0] for row in weighed_rows})
        if weighed
        else {}
    )
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
                recorded_at,
                last_reinforced_at,
                decayed_at,
                *ties.get(fact_id, none),  # open_conflicts, ruled_conflicts
                decay_reverted_at,
                ruled_at.get(fact_id),
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
                recorded_at,
                last_reinforced_at,
                decayed_at,
                decay_reverted_at,
            ) in slot_rows
        ]
    return slots
