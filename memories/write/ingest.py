"""Bulk import: many assertions, the write path's exact outcomes, a fraction of its cost.

Each line of a JSONL file is one assertion with the fields of ``POST /facts``.
Importing a file must end exactly where calling ``assert_fact`` once per line
would: the same statuses, facts, supersessions, conflicts and audit entries.
Only the cost differs. Lines are taken in batches; for each batch the
importer

1. checks every line with ``decisions.parse_assertion`` (a bad line is
   rejected with its number and reason, and the rest go on);
2. resolves every entity the batch names with one query per scope (name,
   then alias, then an entity merge, as ``actions._find_entity`` does), and
   creates the missing ones with one INSERT;
3. takes the advisory locks of all the batch's slots in one statement
   (``actions.lock_slots``: a shared order, so concurrent batches cannot
   deadlock, and ``assert_fact`` callers on those slots wait their turn);
4. reads the clock under the locks and loads every fact that can matter to
   any line of the batch with one query, plus the open conflicts they are in;
5. decides each line in file order with ``decisions.decide``, folding each
   decision into its in-memory copy of the slot, so a later line sees what
   an earlier one wrote exactly as it would have after a commit;
6. writes the end state set-wise: one UPDATE for the standing facts that
   changed, a COPY for the new facts, then conflicts, members and audit
   entries.

Each line gets its own clock reading, a microsecond after the previous
line's, as if the lines had been asserted one after another; without that,
two versions of one value in one file would look simultaneous and the
second would be flagged as backdated instead of superseding the first.

A batch that the database refuses as a whole (which the checks above should
make impossible) is retried one line at a time through ``assert_fact``, so a
single bad line can never take the rest of the file with it: it is rejected
with its number and the reason PostgreSQL (or psycopg, encoding a value for
it) gave, and no entity is left behind that only it named. Lines may come as
bytes, each decoded on its own, so a line that is not UTF-8 is one more
rejected line. What no single line explains (the database going away, a
worker process failing) stops the import with :class:`ImportStopped`, which
carries the report of every line written until then.
"""

import contextlib
import gc
import json
import multiprocessing
import os
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, connections, transaction
from django.utils import timezone

from memories.core import decisions
from memories.core.decisions import Rejected
from memories.core.effects import LookAlike
from memories.core.normalize import name_skeleton, value_key
from memories.store.errors import NotFound, SourceTypeNotAllowed
from memories.store.lookups import hot_cursor, writable_scope
from memories.store.models import Entity, Fact, ObjectKind, Scope
from memories.store.permissions import check_source_type
from memories.store.slots import lock_slots
from memories.store.vocabulary import LoadedVocabulary, load_vocabulary
from memories.write.actions import assert_fact
from memories.write.batch import Line, LineOutcome, do_decide_and_write, rejected

BATCH_SIZE = 1_000
MAX_WORKERS = 4
TICK = timedelta(microseconds=1)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one batch.

    A batch frees everything it builds by reference counting, so the
    collector's passes over it are pure cost
    (docs/bench-log/2026-12-02-import.md). Pausing it per batch, not per import, keeps whatever
    garbage a rare path does leave (a batch redone one line at a time
    through the ORM) from piling up over a long file.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# What a line PostgreSQL cannot store raises: the database's own refusals, and
# psycopg's, which refuses client-side text it cannot encode for the server (a
# lone surrogate) without a word to the server. Anything else is a bug or an
# outage, not a line's fault.
REFUSALS = (DatabaseError, psycopg.Error, UnicodeEncodeError)


@dataclass
class ImportReport:
    outcomes: list[LineOutcome] = field(default_factory=list)
    # Each checked line whose stated confidence its source type's ceiling
    # capped, by line number (issue 31 §3: the answer says when it applied).
    clamps: dict[int, decisions.ConfidenceClamp] = field(default_factory=dict)

    @property
    def clamped(self) -> list[tuple[int, decisions.ConfidenceClamp]]:
        """The written lines whose confidence was capped, in file order."""
        rejected_lines = {outcome.line for outcome in self.rejected}
        return [
            (number, clamp)
            for number, clamp in sorted(self.clamps.items())
            if number not in rejected_lines
        ]

    @property
    def counts(self) -> Counter:
        return Counter(outcome.status for outcome in self.outcomes)

    @property
    def rejected(self) -> list[LineOutcome]:
        return [outcome for outcome in self.outcomes if outcome.status == "rejected"]


class ImportStopped(Exception):
    """The import stopped before the end of its lines, on an error no single line explains.

    ``report`` holds the outcome of every line written before it stopped:
    those lines are in the database as reported, and no other line is.
    """

    def __init__(self, reason: str, report: ImportReport | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.report = report or ImportReport()


def import_lines(
    lines: Iterable[str | bytes],
    *,
    actor: User,
    episode: str | None = None,
    now: datetime | None = None,
    batch_size: int = BATCH_SIZE,
    on_progress: Callable[[int], None] | None = None,
    workers: int = 1,
) -> ImportReport:
    """Assert each JSONL line as ``actor``; ``episode`` fills in lines that name none.

    With ``now`` given, line *i* (counting every non-blank line from 0) is
    asserted at ``now + i µs``, which is what a test comparing this with
    one-by-one ``assert_fact`` calls needs. Without it each batch reads the
    clock under its locks.

    A line given as bytes is decoded on its own: one that is not UTF-8 is
    rejected with its number like any other bad line.

    With ``workers`` above 1 the slots are decided in that many processes
    (see ``_import_in_parallel``); the outcomes are the same. Inside a
    transaction the import stays in this process: other processes could not
    see what the transaction has not committed. Each batch, and each line
    redone on its own, is a savepoint there, so a refused line still costs
    only itself.

    Raises :class:`ImportStopped` (with the report so far) when the import
    cannot go on: the database connection was lost, a worker process failed,
    or any other error that no one line caused.
    """
    clock = _Clock(now)
    if workers > 1 and not connection.in_atomic_block:
        return _import_in_parallel(
            lines,
            actor=actor,
            episode=episode,
            clock=clock,
            batch_size=batch_size,
            on_progress=on_progress,
            workers=workers,
        )
    report = ImportReport()
    try:
        for batch in _batches(lines, batch_size):
            with _collector_paused():
                report.outcomes += _import_batch(
                    batch, actor=actor, episode=episode, clock=clock, clamps=report.clamps
                )
            if on_progress:
                on_progress(len(batch))
    except ImportStopped as stop:
        stop.report.outcomes = report.outcomes + stop.report.outcomes
        raise
    except Exception as error:
        # A failed batch was rolled back whole: the report so far is exact.
        raise ImportStopped(_describe(error), report) from error
    return report


def _batches(lines: Iterable[str | bytes], size: int) -> Iterator[list[tuple[int, str | bytes]]]:
    """The non-blank lines with their numbers in the file, ``size`` at a time."""
    batch: list[tuple[int, str | bytes]] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        batch.append((number, text))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def default_workers() -> int:
    """One worker process per CPU this process may run on, plus one, at most ``MAX_WORKERS``.

    A worker spends much of its time waiting for PostgreSQL, so one more than
    the CPUs keeps them busier (docs/bench-log/2026-12-02-import.md).
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus + 1))


class _Clock:
    """Hands each line its own instant, strictly after every earlier line's."""

    def __init__(self, start: datetime | None) -> None:
        self.fixed = start is not None
        self.next = start

    def batch_start(self) -> datetime:
        if self.fixed:
            assert self.next is not None
            return self.next
        # Read under the batch's locks, and never before the previous batch.
        read = timezone.now()
        return read if self.next is None or read > self.next else self.next

    def take(self, start: datetime, count: int) -> list[datetime]:
        stamps = [start + TICK * i for i in range(count)]
        self.next = start + TICK * count
        return stamps


# --- one batch -----------------------------------------------------------------------


def _import_batch(
    batch: list[tuple[int, str | bytes]],
    *,
    actor,
    episode: str | None,
    clock: _Clock,
    clamps: dict[int, decisions.ConfidenceClamp],
) -> list[LineOutcome]:
    outcomes, lines = _check_lines(batch, actor=actor, episode=episode, clock=clock, clamps=clamps)
    try:
        with transaction.atomic():
            created = _resolve_entities(lines)
            decided, rejected_late = _decide_locked(lines, actor=actor, clock=clock)
            if rejected_late:
                _drop_unused_entities(created)
            outcomes.update(decided)
    except REFUSALS as error:
        # No line of the batch was written (its entities neither): assert
        # them one by one, so a line PostgreSQL refuses costs only itself.
        _stop_if_database_gone(error)
        texts = dict(batch)
        try:
            for line in lines:
                outcomes[line.number] = _one_by_one(
                    line, actor=actor, text=texts[line.number], now=line.now
                )
        except ImportStopped as stop:
            stop.report.outcomes = sorted(outcomes.values(), key=lambda o: o.line)
            raise
    return [outcomes[number] for number, _ in batch]


def _check_lines(
    batch: list[tuple[int, str | bytes]],
    *,
    actor,
    episode: str | None,
    clock: _Clock,
    clamps: dict[int, decisions.ConfidenceClamp],
) -> tuple[dict[int, LineOutcome], list[Line]]:
    """Each line parsed and checked: the rejected ones' outcomes, and the rest as Lines.

    Adds to ``clamps`` each checked line whose stated confidence is above
    its source type's ceiling.
    """
    stamps = clock.take(clock.batch_start(), len(batch))
    outcomes: dict[int, LineOutcome] = {}
    raws: list[tuple[int, dict[str, Any], datetime]] = []
    for (number, text), stamp in zip(batch, stamps, strict=True):
        try:
            raws.append((number, _json_object(text, episode), stamp))
        except Rejected as refused:
            outcomes[number] = rejected(number, refused.field, refused.message)
    vocab = _vocabulary_for(raw for _, raw, _ in raws)
    lines: list[Line] = []
    scopes: dict[str, Scope | None] = {}
    for number, raw, stamp in raws:
        try:
            line = _parse(number, raw, actor, vocab, scopes, now=stamp)
        except Rejected as refused:
            outcomes[number] = rejected(number, refused.field, refused.message)
            continue
        clamp = decisions.confidence_clamp(line.assertion, vocab.spec)
        if clamp is not None:
            clamps[number] = clamp
        lines.append(line)
    return outcomes, lines


def _json_object(text: str | bytes, episode: str | None) -> dict[str, Any]:
    if isinstance(text, bytes):
        # Strictly UTF-8 (json.loads would also guess UTF-16 or UTF-32 from bytes).
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Rejected(
                "line", f"is not UTF-8 text (byte 0x{text[error.start]:02x} at {error.start + 1})"
            ) from None
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        raise Rejected("line", "is not valid JSON") from None
    if not isinstance(raw, dict):
        raise Rejected("line", "must be a JSON object")
    if episode and not raw.get("episode"):
        raw["episode"] = episode
    return raw


def _vocabulary_for(raws: Iterable[Mapping[str, Any]]) -> LoadedVocabulary:
    """The vocabulary, read afresh if a line names a predicate or source the cached copy lacks."""
    vocab = load_vocabulary()
    for raw in raws:
        predicate, source = raw.get("predicate"), raw.get("source_type")
        if (isinstance(predicate, str) and predicate not in vocab.predicates) or (
            isinstance(source, str) and source not in vocab.sources
        ):
            return load_vocabulary({"predicate": predicate, "source_type": source})
    return vocab


def _parse(number, raw, actor, vocab, scopes, *, now: datetime) -> Line:
    # Times come back in UTC: parse_time has already refused one out of range.
    assertion = decisions.parse_assertion(raw, vocab.spec, now=now)
    if assertion.scope not in scopes:
        try:
            # A savepoint inside a transaction: a name the database refuses
            # must not abort the transaction the other lines are written in.
            with transaction.atomic():
                scopes[assertion.scope] = writable_scope(actor, assertion.scope)
        except NotFound:
            scopes[assertion.scope] = None
        except REFUSALS as error:
            _stop_if_database_gone(error)
            raise Rejected("scope", _refusal(error)) from None
    scope = scopes[assertion.scope]
    if scope is None:
        raise Rejected("scope", "not found")
    try:
        check_source_type(actor, scope, assertion.source_type)
    except SourceTypeNotAllowed as refused:
        # The batch's convention: the line is rejected, naming the field.
        raise Rejected(refused.field, str(refused)) from None
    return Line(number=number, assertion=assertion, scope_id=scope.pk, now=now)


def _one_by_one(line: Line, *, actor, text: str | bytes, now: datetime | None) -> LineOutcome:
    data = _json_object(text, line.assertion.episode)
    try:
        result = assert_fact(actor=actor, data=data, now=now)
    except Rejected as refused:
        return rejected(line.number, refused.field, refused.message)
    except NotFound:
        return rejected(line.number, "scope", "not found")
    except REFUSALS as error:
        # psycopg's own errors too: the write path runs some queries on raw cursors.
        _stop_if_database_gone(error)
        return _refused(line.number, error, data)
    return LineOutcome(
        line=line.number,
        status=result.status,
        reason=result.reason,
        fact_id=result.fact.pk,
        candidates=tuple(fact.pk for fact in result.candidates),
        superseded=tuple(result.superseded),
        conflict_id=result.conflict.pk if result.conflict else None,
    )


def _refused(number: int, error: BaseException, data: Mapping[str, Any]) -> LineOutcome:
    """A line the database refused: rejected with the reason, naming the field if it can.

    The checks should have refused text PostgreSQL cannot store; should one
    get through, the field holding it is named (psycopg refuses to encode a
    lone surrogate, PostgreSQL refuses one escaped in JSON, or a NUL). Other
    refusals (a constraint, a limit) are the line's as a whole.
    """
    field_name = next((name for name, value in data.items() if _unstorable(value)), "line")
    return rejected(number, field_name, _refusal(error))


def _unstorable(value: Any) -> bool:
    """Whether ``value`` holds text, at any depth, that PostgreSQL cannot store."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")  # a lone surrogate has no UTF-8
        except UnicodeEncodeError:
            return True
        return "\x00" in value
    if isinstance(value, dict):
        return any(_unstorable(key) or _unstorable(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_unstorable(item) for item in value)
    return False


def _refusal(error: BaseException) -> str:
    if isinstance(error, UnicodeEncodeError):
        character = error.object[error.start : error.start + 1]
        return f"cannot be stored: {error.reason} (U+{ord(character):04X})"
    return f"the database refused it: {_describe(error)}"


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _stop_if_database_gone(error: BaseException) -> None:
    """After a refusal: stop the import if the database cannot be reached any more.

    A connection that was lost (a restart, a terminated backend) is opened
    again, so an outage that ends costs only the lines it met; one that does
    not end, or a connection lost inside the caller's transaction, stops the
    import: no later line could be written either.
    """
    if not _connection_lost():
        return
    if connection.in_atomic_block:
        raise ImportStopped(f"the database connection was lost: {_describe(error)}") from error
    connection.close()
    try:
        connection.ensure_connection()
    except DatabaseError as gone:
        raise ImportStopped(f"the database cannot be reached: {_describe(gone)}") from error


def _connection_lost() -> bool:
    """Whether Django's connection is gone: closed by Django after a failed rollback, or
    broken under it."""
    raw = connection.connection
    return raw is None or raw.closed or raw.broken


def _decide_locked(
    lines: list[Line], *, actor, clock: _Clock
) -> tuple[list[tuple[int, LineOutcome]], bool]:
    """Lock the lines' slots, decide them in order and write the result (in a transaction).

    The lines' subjects and entity objects are resolved already. Returns the
    outcomes, and whether a line was refused only under the locks.
    """
    if not lines:
        return [], False
    vocab = _vocabulary_for(
        {"predicate": line.assertion.predicate, "source_type": line.assertion.source_type}
        for line in lines
    )
    _hold_entities(lines)
    lock_slots(
        (line.scope_id, line.subject_id, vocab.spec.slot_name(line.assertion.predicate))
        for line in lines
    )
    if not clock.fixed:
        # The clock is read under the locks (see actions.assert_fact): the
        # stamps handed out before are moved past anything a previous holder
        # of one of these locks just committed.
        start = clock.batch_start()
        for line, stamp in zip(lines, clock.take(start, len(lines)), strict=False):
            line.now = stamp
    return do_decide_and_write(lines, actor=actor, vocab=vocab)


def _hold_entities(lines: list[Line]) -> None:
    """Hold every entity the lines name against merges, before any slot lock (as a write does).

    The set-wise twin of ``claimgraph_entity_held`` (memories/sql/slots.sql):
    each entity's own lock taken shared, in id order, in the transaction that
    writes the lines (a worker's too, which did not resolve them), then the
    merges looked up again. A merge committed since the lines were resolved
    moves them onto its survivor here; one still under way has taken the
    lock exclusively, so this waits for it. Without this, a line could be
    written naming an entity a merge had just moved everything away from.
    """
    by_scope: dict[int, set[int]] = {}
    for line in lines:
        ids = by_scope.setdefault(line.scope_id, set())
        ids.add(line.subject_id)
        if line.object_ref_id is not None:
            ids.add(line.object_ref_id)
    survivor: dict[tuple[int, int], int] = {}
    with hot_cursor() as cursor:
        for scope_id, ids in sorted(by_scope.items()):
            wanted = sorted(ids)
            cursor.execute(_HOLD_ENTITIES, [scope_id, wanted])
            cursor.execute(_MERGED_INTO, [scope_id, wanted])
            survivor.update(
                ((scope_id, entity), into) for entity, into in cursor.fetchall() if into is not None
            )
    if not survivor:
        return
    names = dict(Entity.objects.filter(pk__in=set(survivor.values())).values_list("pk", "name"))
    for line in lines:
        line.subject_id = survivor.get((line.scope_id, line.subject_id), line.subject_id)
        if line.object_ref_id is not None:
            line.object_ref_id = survivor.get(
                (line.scope_id, line.object_ref_id), line.object_ref_id
            )
            line.object_key = str(line.object_ref_id)
        # A look-alike name now names the survivor, as the write path would say.
        line.look_alikes = tuple(
            alike._replace(entity_id=into, entity_name=names[into])
            if (into := survivor.get((line.scope_id, alike.entity_id))) is not None
            else alike
            for alike in line.look_alikes
        )


# The shared side of the lock a merge takes on the entity it merges away
# (memories.store.slots.lock_entity_against_writes); PostgreSQL evaluates the
# volatile function after the ORDER BY, so every importer takes them in id order.
_HOLD_ENTITIES = """
SELECT pg_advisory_xact_lock_shared(claimgraph_slot_lock_id(%s, e.id, ''))
  FROM unnest(%b::bigint[]) AS e(id) ORDER BY e.id
"""


# --- in parallel ---------------------------------------------------------------------
#
# Slots never interact: a line's decision reads only its own slot (its
# subject's facts under its predicate or exclusion group). So once each
# line's subject is resolved to an entity, the lines can be split by subject
# among worker processes, each deciding its share in file order on its own
# connection, and every slot sees exactly the sequence of lines it would
# see in one process. This process reads and checks the lines and resolves
# (and creates) their entities in file order, so a new entity still takes
# the spelling of its first mention; the workers lock, decide and write.
# Workers never wait for each other: their slot locks, facts and conflicts
# are disjoint, and only this process writes entities.


def _import_in_parallel(
    lines: Iterable[str | bytes],
    *,
    actor: User,
    episode: str | None,
    clock: _Clock,
    batch_size: int,
    on_progress: Callable[[int], None] | None,
    workers: int,
) -> ImportReport:
    # Forked workers must not share this process's connection: close it, and
    # each side opens its own on first use.
    connections.close_all()
    context = multiprocessing.get_context("fork")
    pipes = []
    processes = []
    for _ in range(workers):
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_worker, args=(theirs, actor, clock.next if clock.fixed else None)
        )
        process.start()
        theirs.close()
        pipes.append(ours)
        processes.append(process)

    outcomes: dict[int, LineOutcome] = {}
    clamps: dict[int, decisions.ConfidenceClamp] = {}
    created: list[int] = []
    # What each worker holds: the lines of its share and their text, kept
    # here for the rare share PostgreSQL refuses as a whole.
    held: list[tuple[list[Line], dict[int, str | bytes]] | None] = [None] * workers
    # Set once a line whose entities this process created is rejected after
    # all: those entities may now be named by no fact.
    stale_entities = False
    stopped: ImportStopped | None = None

    def collect(worker: int, *, redo: bool = True) -> None:
        nonlocal stale_entities
        share, texts = held[worker] or ([], {})
        held[worker] = None
        try:
            message = pipes[worker].recv()
        except (EOFError, OSError):
            message = ("failed", "the worker process went away")
        if message[0] == "failed":
            stale_entities = True
            raise ImportStopped(f"a worker process failed: {message[1]}")
        decided: list[LineOutcome] = []
        if message[0] == "refused":
            # Nothing of the share was written: one line at a time, here, so
            # only an offending line is rejected. A fixed clock keeps each
            # line's instant; otherwise assert_fact reads it under its lock.
            # Not while stopping: those lines are then simply not written.
            stale_entities = True
            try:
                for line in share if redo else ():
                    decided.append(
                        _one_by_one(
                            line,
                            actor=actor,
                            text=texts[line.number],
                            now=line.now if clock.fixed else None,
                        )
                    )
            finally:
                outcomes.update((outcome.line, outcome) for outcome in decided)
        else:
            decided = message[1]
            outcomes.update((outcome.line, outcome) for outcome in decided)
            # A line can still be refused under the locks (its interval ends
            # before the time it was read at).
            stale_entities = stale_entities or any(o.status == "rejected" for o in decided)
        if on_progress:
            on_progress(len(decided))

    try:
        for batch in _batches(lines, batch_size * workers):
            with _collector_paused():
                checked, parsed = _check_lines(
                    batch, actor=actor, episode=episode, clock=clock, clamps=clamps
                )
                outcomes.update(checked)
                if on_progress and checked:
                    on_progress(len(checked))
                if not parsed:
                    continue
                texts = dict(batch)
                parsed, made, refused = _resolve_apart(parsed, texts)
                created += made
                outcomes.update(refused)
                if on_progress and refused:
                    on_progress(len(refused))
                shares: list[list[Line]] = [[] for _ in range(workers)]
                for line in parsed:
                    shares[line.subject_id % workers].append(line)
                for worker, share in enumerate(shares):
                    if not share:
                        continue
                    if held[worker] is not None:
                        collect(worker)
                    # A worker holds one share at a time: neither side can block
                    # sending while the other is blocked sending back.
                    pipes[worker].send([line.as_tuple() for line in share])
                    held[worker] = (share, {line.number: texts[line.number] for line in share})
        for worker in range(workers):
            if held[worker] is not None:
                collect(worker)
    except Exception as error:
        if isinstance(error, ImportStopped):
            stopped = error
        else:
            stopped = ImportStopped(_describe(error))
            stopped.__cause__ = error
        # The shares still out may have been written: wait for their
        # outcomes, so that the report says exactly what was.
        for worker in range(workers):
            if held[worker] is not None:
                with contextlib.suppress(ImportStopped):
                    collect(worker, redo=False)
    finally:
        for pipe, process in zip(pipes, processes, strict=True):
            with contextlib.suppress(OSError):
                pipe.send(None)
            pipe.close()
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
    if stale_entities or stopped:
        _drop_unused_entities(created)
    report = ImportReport(clamps=clamps)
    report.outcomes = [outcomes[number] for number in sorted(outcomes)]
    if stopped is not None:
        stopped.report = report
        raise stopped
    return report


def _resolve_apart(
    lines: list[Line], texts: Mapping[int, str | bytes]
) -> tuple[list[Line], list[int], dict[int, LineOutcome]]:
    """Resolve the lines' entities (committed); a line the database refuses is rejected alone.

    Returns the lines resolved, the ids of the entities created, and the
    outcomes of the lines refused.
    """
    try:
        with transaction.atomic():
            return lines, _resolve_entities(lines), {}
    except REFUSALS as error:
        _stop_if_database_gone(error)
    # Nothing was written: again one line at a time, in file order, so a new
    # entity still takes the spelling of its first mention.
    kept: list[Line] = []
    created: list[int] = []
    refused: dict[int, LineOutcome] = {}
    for line in lines:
        try:
            with transaction.atomic():
                created += _resolve_entities([line])
        except REFUSALS as error:
            _stop_if_database_gone(error)
            refused[line.number] = _refused(
                line.number, error, _json_object(texts[line.number], None)
            )
            continue
        kept.append(line)
    return kept, created, refused


def _worker(pipe, actor, fixed_start: datetime | None) -> None:
    """One worker: decide each share it is sent and send back the outcomes, until sent None.

    A share PostgreSQL refuses as a whole (which the checks should make
    impossible) is answered ``refused``: nothing of it was written. Any other
    error is answered ``failed`` with its trace, and the worker stops.
    """
    clock = _Clock(fixed_start)
    # What this process inherited at the fork (Django, the app registry, the
    # vocabulary) lives as long as it does: kept out of every collection.
    gc.freeze()
    try:
        while (packed := pipe.recv()) is not None:
            lines = [Line.from_tuple(values) for values in packed]
            try:
                with _collector_paused(), transaction.atomic():
                    decided, _ = _decide_locked(lines, actor=actor, clock=clock)
            except REFUSALS:
                if _connection_lost():
                    connection.close()  # the next share opens a new one
                pipe.send(("refused",))  # the importing process redoes it line by line
                continue
            pipe.send(("decided", [outcome for _, outcome in decided]))
    except EOFError:
        pass  # the importing process went away: nothing more to do
    except BaseException:
        with contextlib.suppress(OSError):
            pipe.send(("failed", traceback.format_exc()))
    finally:
        connections.close_all()
        pipe.close()


# --- entities ------------------------------------------------------------------------

# The steps of ``claimgraph_entity`` (memories/sql/slots.sql: name, else alias
# with the lowest id, else look with the lowest id, then a merge in force,
# memories/sql/merges.sql), each for a whole batch of keys in one indexed
# statement.
_BY_NAME = f"""
SELECT key, id FROM {Entity._meta.db_table} WHERE scope_id = %s AND key = ANY(%b::varchar[])
"""
_BY_ALIAS = f"""
SELECT DISTINCT ON (alias.key) alias.key, e.id
  FROM {Entity._meta.db_table} e CROSS JOIN LATERAL unnest(e.alias_keys) AS alias(key)
 WHERE e.scope_id = %s AND e.alias_keys && %b::varchar[] AND alias.key = ANY(%b::varchar[])
 ORDER BY alias.key, e.id
"""
_BY_LOOK = f"""
SELECT looks.skeleton, min(looks.id) FROM (
    SELECT e.skeleton, e.id FROM {Entity._meta.db_table} e
     WHERE e.scope_id = %s AND e.skeleton = ANY(%b::text[])
    UNION ALL
    SELECT look.skeleton, e.id
      FROM {Entity._meta.db_table} e CROSS JOIN LATERAL unnest(e.alias_skeletons) AS look(skeleton)
     WHERE e.scope_id = %s AND e.alias_skeletons && %b::text[] AND look.skeleton = ANY(%b::text[])
) AS looks
 GROUP BY looks.skeleton
"""
# Each entity with the one it is merged into, or NULL.
_MERGED_INTO = """
SELECT e.id, (SELECT m.into_id FROM claimgraph_merge_in_force(%s, e.id) AS m)
  FROM unnest(%b::bigint[]) AS e(id)
"""
# A first mention's lock (claimgraph_entity's): taken in one order by every importer.
_LOCK_LOOKS = """
SELECT pg_advisory_xact_lock(claimgraph_entity_lock_id(%s, look))
  FROM unnest(%b::text[]) AS look ORDER BY look
"""


def _resolve_entities(lines: list[Line]) -> list[int]:
    """Set each line's subject and entity object; return the ids of entities created.

    A name that only looks like an entity's name or alias (its skeleton) is
    that entity, as on the write path, and is noted on its line for the
    audit feed; among new names of the batch that look alike, the first
    mention creates the entity and the others resolve to it.
    """
    # The first mention of a new name gives the entity its spelling, as the
    # first of one-by-one assertions would.
    wanted: dict[int, dict[str, str]] = {}
    for line in lines:
        names = wanted.setdefault(line.scope_id, {})
        a = line.assertion
        names.setdefault(value_key(a.subject), a.subject.strip())
        if a.object_kind == ObjectKind.ENTITY:
            names.setdefault(value_key(a.object), a.object.strip())

    ids: dict[tuple[int, str], int] = {}
    looked: set[tuple[int, str]] = set()  # keys found by their look only
    created: list[int] = []
    with hot_cursor() as cursor:
        for scope_id, names in wanted.items():
            looks = {key: name_skeleton(name) for key, name in names.items()}
            found, by_look = _lookup_entities(cursor, scope_id, list(names), looks)
            missing = [key for key in names if key not in found]
            if missing:
                cursor.execute(_LOCK_LOOKS, [scope_id, sorted({looks[key] for key in missing})])
                more, more_by_look = _lookup_entities(cursor, scope_id, missing, looks)
                found.update(more)
                by_look |= more_by_look
                # One new entity per look, named by its first mention; sorted
                # by key, so two imports creating overlapping names take the
                # unique index's row locks in one order.
                first_of_look: dict[str, str] = {}
                for key in names:
                    if key not in found:
                        first_of_look.setdefault(looks[key], key)
                new = sorted(first_of_look.values())
                if new:
                    cursor.execute(
                        f"""
                        INSERT INTO {Entity._meta.db_table}
                            (scope_id, name, key, type, aliases, alias_keys, skeleton,
                             alias_skeletons, created_at)
                        SELECT %s, name, key, '', '{{}}', '{{}}', look, '{{}}', now()
                          FROM unnest(%b::varchar[], %b::varchar[], %b::text[])
                               AS new(name, key, look)
                        ON CONFLICT (scope_id, key) DO NOTHING
                        RETURNING id
                        """,
                        [scope_id, [names[key] for key in new], new, [looks[key] for key in new]],
                    )
                    created += [row[0] for row in cursor.fetchall()]
                    more, more_by_look = _lookup_entities(
                        cursor, scope_id, [key for key in names if key not in found], looks
                    )
                    found.update(more)
                    by_look |= more_by_look
            ids.update({(scope_id, key): entity for key, entity in found.items()})
            looked.update((scope_id, key) for key in by_look)

    entity_names = (
        dict(Entity.objects.filter(pk__in={ids[k] for k in looked}).values_list("pk", "name"))
        if looked
        else {}
    )
    for line in lines:
        a = line.assertion
        alikes = []
        subject_key = (line.scope_id, value_key(a.subject))
        line.subject_id = ids[subject_key]
        if subject_key in looked:
            alikes.append(
                LookAlike(
                    "subject", a.subject.strip(), line.subject_id, entity_names[line.subject_id]
                )
            )
        if a.object_kind == ObjectKind.ENTITY:
            object_key = (line.scope_id, value_key(a.object))
            line.object_ref_id = ids[object_key]
            line.object_key = str(line.object_ref_id)
            if object_key in looked:
                alikes.append(
                    LookAlike(
                        "object",
                        a.object.strip(),
                        line.object_ref_id,
                        entity_names[line.object_ref_id],
                    )
                )
        else:
            line.object_key = value_key(a.object)
        line.look_alikes = tuple(alikes)
    return created


def _lookup_entities(
    cursor, scope_id: int, keys: list[str], looks: dict[str, str]
) -> tuple[dict[str, int], set[str]]:
    """The entities the keys name (by name, alias, then look), and the keys found by look."""
    cursor.execute(_BY_NAME, [scope_id, keys])
    found = dict(cursor.fetchall())
    by_alias = [key for key in keys if key not in found]
    if by_alias:
        cursor.execute(_BY_ALIAS, [scope_id, by_alias, by_alias])
        found.update(cursor.fetchall())
    by_look = {key for key in keys if key not in found}
    if by_look:
        wanted = sorted({looks[key] for key in by_look})
        cursor.execute(_BY_LOOK, [scope_id, wanted, scope_id, wanted, wanted])
        entity_of_look = dict(cursor.fetchall())
        by_look = {key for key in by_look if looks[key] in entity_of_look}
        found.update({key: entity_of_look[looks[key]] for key in by_look})
    if found:
        cursor.execute(_MERGED_INTO, [scope_id, sorted(set(found.values()))])
        merged = dict(cursor.fetchall())
        found = {key: merged[entity] or entity for key, entity in found.items()}
    return found, by_look


def _drop_unused_entities(created: list[int]) -> None:
    """Entities the import created only for lines it then rejected: not written after all.

    Best effort: should the database refuse (a writer naming one of them
    just committed a fact, or the connection is gone), they stay, which
    costs nothing but a name.
    """
    if not created:
        return
    fact_table = Fact._meta.db_table
    with contextlib.suppress(*REFUSALS), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            DELETE FROM {Entity._meta.db_table} e WHERE e.id = ANY(%s)
               AND NOT EXISTS (SELECT 1 FROM {fact_table} f WHERE f.subject_id = e.id)
               AND NOT EXISTS (SELECT 1 FROM {fact_table} f WHERE f.object_ref_id = e.id)
            """,
            [created],
        )


def read_raw_lines(path: str) -> Iterator[bytes]:
    """The lines of a JSONL file (``-`` for standard input) as bytes.

    ``import_lines`` decodes each line on its own, so a line that is not
    UTF-8 is rejected with its number instead of stopping the import there.
    """
    if path == "-":
        yield from getattr(sys.stdin, "buffer", sys.stdin)
        return
    with open(path, "rb") as handle:
        yield from handle


def read_lines(path: str) -> Iterator[str]:
    """The lines of a JSONL file (``-`` for standard input), decoded as UTF-8."""
    if path == "-":
        yield from sys.stdin
        return
    with open(path, encoding="utf-8", errors="strict") as handle:
        yield from handle
