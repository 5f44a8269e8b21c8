"""Background work: Django's tasks, run by ``manage.py worker`` on PostgreSQL (SPEC §7, §12).

Tasks take ids, never rows, so what they act on is read when they run. Work
caused by a change is enqueued when that change commits
(``transaction.on_commit``): a task must never run against a write that was
rolled back, nor before the write it follows is visible to it. An enqueue
whose identical task is still waiting in the queue is dropped, since the
waiting one will read the same rows. The truth slots a write touches are the
exception, being asked for on every write: they are marked in the write's own
transaction (``recompute_on_commit``) and one drain recomputes them all.

The periodic work a worker's scheduler enqueues is listed in
``memories.maintenance.worker.PERIODIC_JOBS`` (there, not here, because the crawler's
task sits above ``memories.store.apply``, which enqueues the tasks of this module)
and ``notifications.worker.PERIODIC_JOBS`` (with the doctor's and the notifications'); how each runs
once per period whatever the number of workers is ``enqueue_periodic``'s.
"""

import logging
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Subquery
from django.tasks import Task, TaskContext, TaskResult, TaskResultStatus, task
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from psycopg.types.json import Jsonb

from memories.maintenance import truth
from memories.store.models import PeriodicRun, Predicate, TouchedSlot, WorkerHeartbeat

logger = logging.getLogger(__name__)

# How many stale slots one sweep recomputes before it hands the rest to a
# sweep of its own, so a vocabulary change over a large store never becomes
# one task that runs for an hour.
SWEEP_BATCH = 500


# --- truth maintenance ------------------------------------------------------------


@task
def recompute_slot_task(scope_id: int, subject_id: int, predicate_id: int) -> dict[str, Any]:
    """Recompute one truth slot; enqueue its adjudication when a model should be asked."""
    return _summary(_recompute(scope_id, subject_id, predicate_id))


@task
def adjudicate_slot_task(
    scope_id: int, subject_id: int, predicate_id: int, claim_set_hash: str
) -> dict[str, Any]:
    """Ask the adjudicator about one claim set; commit only if the slot still holds it."""
    result = truth.adjudicate_slot(scope_id, subject_id, predicate_id, claim_set_hash)
    _follow_up(result)
    return _summary(result)


@task
def sweep_stale_slots_task(predicate_id: int | None = None) -> dict[str, int]:
    """Recompute stale truth slots (of one predicate, or all), a batch at a time."""
    marked = truth.mark_outdated_slots() if predicate_id is None else 0
    slots = truth.stale_slots(limit=SWEEP_BATCH, predicate_id=predicate_id)
    failed = []
    for slot in slots:
        # One slot that cannot be recomputed must not hold up the others;
        # it stays stale, and the sweep fails visibly once the rest are done.
        try:
            _recompute(*slot)
        except Exception:
            logger.exception("recomputing truth slot %s failed", slot)
            failed.append(slot)
    if len(slots) == SWEEP_BATCH:
        enqueue_once(sweep_stale_slots_task, predicate_id=predicate_id)
    if failed:
        raise SweepFailed(f"{len(failed)} of {len(slots)} stale slots failed: {failed[:10]}")
    return {"marked_outdated": marked, "recomputed": len(slots)}


@task
def recompute_touched_slots_task() -> dict[str, int]:
    """Recompute the slots that writes touched (``recompute_on_commit``), oldest first.

    Enqueued by a worker's scheduler whenever touched slots wait and no run
    of this task is queued or running (``memories.maintenance.worker.PERIODIC_JOBS``), so
    any number of writes to a slot between two runs cost one recompute. A
    slot whose recompute fails leaves the drain to a ``recompute_slot_task``
    of its own, which fails visibly with the slot's ids and can be retried;
    the other slots go on.
    """
    slots = truth.touched_slots(limit=SWEEP_BATCH)
    for slot in slots:
        try:
            _recompute(*slot)
        except Exception:
            logger.exception("recomputing touched truth slot %s failed", slot)
            truth.forget_touched(*slot)
            enqueue_once(
                recompute_slot_task, scope_id=slot[0], subject_id=slot[1], predicate_id=slot[2]
            )
    if len(slots) == SWEEP_BATCH:
        enqueue_once(recompute_touched_slots_task)
    return {"recomputed": len(slots)}


class SweepFailed(Exception):
    """Some stale slots could not be recomputed (each is logged with its error)."""


def _recompute(scope_id: int, subject_id: int, predicate_id: int) -> truth.Recomputation:
    result = truth.recompute_slot(scope_id, subject_id, predicate_id)
    _follow_up(result)
    return result


def _follow_up(result: truth.Recomputation) -> None:
    # Several values compete and a model could weigh them: ask it from a task
    # of its own, never inside this recompute (SPEC §7).
    if result.wants_adjudication:
        slot = result.slot
        enqueue_on_commit(
            adjudicate_slot_task,
            scope_id=slot.scope_id,
            subject_id=slot.subject_id,
            predicate_id=slot.predicate_id,
            claim_set_hash=slot.claim_set_hash,
        )


def _summary(result: truth.Recomputation) -> dict[str, Any]:
    return {
        "decided_by": result.outcome.decided_by,
        "claim_set_hash": result.outcome.claim_set_hash,
        "adjudication_enqueued": result.wants_adjudication,
    }


def slots_touched() -> bool:
    """Whether any truth slot waits for the drain (``recompute_touched_slots_task``)."""
    return TouchedSlot.objects.exists()


def enqueue_slot_recompute(scope_id: int, subject_id: int, predicate_id: int) -> None:
    """Recompute this one slot in a task of its own once the current transaction commits."""
    enqueue_on_commit(
        recompute_slot_task, scope_id=scope_id, subject_id=subject_id, predicate_id=predicate_id
    )


def mark_predicate_slots_stale(predicate: Predicate, reason: str) -> int:
    """Mark the predicate's truth slots stale and recompute them after commit; how many."""
    marked = truth.mark_slots_stale(predicate.pk, reason)
    if marked:
        enqueue_on_commit(sweep_stale_slots_task, predicate_id=predicate.pk)
    return marked


# --- liveness -------------------------------------------------------------------------


@task(takes_context=True)
def heartbeat(context: TaskContext) -> str:
    """Record a heartbeat for the worker that runs this task: proof that it takes work."""
    worker_id = context.task_result.worker_ids[-1]
    record_heartbeat(worker_id, now=timezone.now())
    return worker_id


def record_heartbeat(
    worker_id: str, *, now: datetime, started_at: datetime | None = None
) -> WorkerHeartbeat:
    """Say that ``worker_id`` (this process) is alive at ``now``."""
    beat, _ = WorkerHeartbeat.objects.update_or_create(
        worker_id=worker_id,
        defaults={
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "beat_at": now,
            "stopped_at": None,
        },
        create_defaults={
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "beat_at": now,
            "started_at": started_at or now,
        },
    )
    return beat


def record_worker_stopped(worker_id: str, *, now: datetime) -> None:
    """Say that ``worker_id`` stopped cleanly: it is gone, not late."""
    WorkerHeartbeat.objects.filter(worker_id=worker_id).update(beat_at=now, stopped_at=now)


# --- periodic work --------------------------------------------------------------------

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# How many of a job's latest runs are kept: the Health page shows the last
# few, and the current period's row must outlive its period (at least two).
KEEP_PERIODIC_RUNS = 20


@dataclass(frozen=True)
class PeriodicJob:
    """A task enqueued once every ``every()`` seconds, whichever worker's scheduler gets there.

    Periods are fixed on the clock: the period of a moment is
    ``floor(epoch seconds / every)``, so every worker agrees on it whatever
    its start time. ``name`` keys the job's runs (``PeriodicRun.job``) and
    must not change while workers run. ``every`` is read at each tick, so a
    setting changed in a test takes effect without restarting the
    scheduler; every worker must be given the same one.
    """

    name: str
    task: Task
    every: Callable[[], float]
    # Seconds after the scheduler starts before its first run (0: at once).
    first_after: float = 0.0
    # Asked at each due tick when given: the job is enqueued only if it has work.
    wanted: Callable[[], bool] | None = None

    def period_start(self, now: datetime) -> datetime:
        """The start of the period ``now`` falls in."""
        return period_start(now, self.every())

    def seconds_to_next_period(self, now: datetime) -> float:
        """How long from ``now`` until the next period starts."""
        return seconds_to_next_period(now, self.every())


def period_start(now: datetime, every: float) -> datetime:
    """The latest multiple of ``every`` seconds since the epoch at or before ``now``.

    Counted in whole microseconds, so two workers that read different
    moments of one period compute the same instant to the microsecond.
    """
    step = max(1, round(every * 1_000_000))
    elapsed = (now - EPOCH) // timedelta(microseconds=1)
    return EPOCH + timedelta(microseconds=elapsed - elapsed % step)


def seconds_to_next_period(now: datetime, every: float) -> float:
    """How long from ``now`` until the next period of ``every`` seconds starts."""
    return (period_start(now, every) - now).total_seconds() + every


def enqueue_periodic(job: PeriodicJob, *, now: datetime) -> TaskResult | None:
    """Enqueue ``job``'s run for the period ``now`` falls in, unless that period has one.

    The guarantee is the database's: the period's ``PeriodicRun`` row is
    inserted with ``ON CONFLICT DO NOTHING`` on its unique (job, period),
    in the transaction that enqueues the task. Of any number of workers
    inserting one period at once, PostgreSQL lets one in and makes the
    others wait for it: if it commits, their inserts do nothing and they
    enqueue nothing; if it rolls back, its task goes with it and one of
    them claims the period instead. The row and its task commit together or
    not at all, so a period never has two runs, nor a claim without its run.

    Two reads come first and only ever skip a period: a job with
    ``wanted`` is not run when it has no work, and no job is enqueued while
    a run of its task still waits or runs (a slow crawl does not pile up
    copies).
    """
    if job.wanted is not None and not job.wanted():
        return None
    busy = DBTaskResult.objects.filter(
        task_path=job.task.module_path,
        status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING],
    )
    if busy.exists():
        return None
    with transaction.atomic():
        claimed = _claim_period(job.name, job.period_start(now), now)
        if claimed is None:  # another worker's run of this period committed first
            return None
        result = job.task.enqueue()
        PeriodicRun.objects.filter(pk=claimed).update(task_result_id=result.id)
        _forget_old_runs(job.name)
    return result


def _claim_period(job: str, start: datetime, now: datetime) -> int | None:
    """The new ``PeriodicRun`` of ``job`` for the period at ``start``, or None if it has one.

    Inside the caller's transaction: the claim stands only if it commits.
    """
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM_PERIOD_SQL, [job, start, now])
        claimed = cursor.fetchone()
    return None if claimed is None else claimed[0]


_CLAIM_PERIOD_SQL = (
    f"INSERT INTO {PeriodicRun._meta.db_table} (job, period_start, enqueued_at)"
    " VALUES (%s, %s, %s) ON CONFLICT (job, period_start) DO NOTHING RETURNING id"
)


def _forget_old_runs(job: str) -> None:
    # Bounded history, so a job due every half second keeps a few rows, not
    # a table that grows forever.
    kept = (
        PeriodicRun.objects.filter(job=job)
        .order_by("-period_start")
        .values("period_start")[KEEP_PERIODIC_RUNS - 1 : KEEP_PERIODIC_RUNS]
    )
    PeriodicRun.objects.filter(job=job, period_start__lt=Subquery(kept)).delete()


# --- enqueueing and retrying ----------------------------------------------------------


def enqueue_on_commit(task_: Task, **kwargs: Any) -> None:
    """Enqueue ``task_(**kwargs)`` when the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: enqueue_once(task_, **kwargs))


def enqueue_once(task_: Task, **kwargs: Any) -> TaskResult | None:
    """Enqueue ``task_(**kwargs)`` unless the same call is already waiting in the queue.

    Only a *waiting* duplicate counts: one already running may have read
    the rows before the change that asks for this run.

    The check and the enqueue run under a transaction-scoped advisory lock
    keyed on the task and its arguments, so two processes asking for the
    same call take turns, and the second one's check (a statement of its
    own, so a snapshot taken after the lock) sees the first one's task. The
    lock is released when the transaction that holds the new task commits,
    never before it is visible: inside a caller's transaction, at that
    transaction's commit. (A session lock would be released at unlock, or
    never on a pooled connection; and django-tasks-db's table is not ours to
    give a unique index, which would also refuse a plain ``enqueue`` of a
    task already waiting.)
    """
    arguments = Jsonb({"args": [], "kwargs": kwargs})
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_ENQUEUE_LOCK_SQL, [task_.module_path, arguments])
        cursor.execute(_WAITING_SQL, [TaskResultStatus.READY, task_.module_path, arguments])
        (waiting,) = cursor.fetchone()
        if waiting:
            return None
        return task_.enqueue(**kwargs)


# jsonb's text is canonical (keys in one order), so equal arguments hash alike.
_ENQUEUE_LOCK_SQL = (
    "SELECT pg_advisory_xact_lock(hashtextextended("
    "'claimgraph:task:' || %s || ':' || (%s::jsonb)::text, 0))"
)
_WAITING_SQL = (
    f"SELECT EXISTS (SELECT 1 FROM {DBTaskResult._meta.db_table}"
    " WHERE status = %s AND task_path = %s AND args_kwargs = %s)"
)


class WorkerLost(Exception):
    """The worker running a task went away before the task finished."""


def fail_abandoned(
    task_result_ids: Iterable[str],
    *,
    now: datetime,
    why: str = "Marked failed from the admin: its worker stopped before it finished.",
) -> int:
    """Mark these tasks failed if they are still running: their worker is gone. How many.

    django-tasks-db never takes a running task back, so one whose worker
    was killed stays running for ever, and its periodic job is never
    enqueued again. Once failed, it can be retried (``retry_failed``). A
    worker that was only slow and finishes after all records its result
    over this.
    """
    return DBTaskResult.objects.filter(
        pk__in=list(task_result_ids), status=TaskResultStatus.RUNNING
    ).update(
        status=TaskResultStatus.FAILED,
        finished_at=now,
        return_value=None,
        exception_class_path=f"{WorkerLost.__module__}.{WorkerLost.__qualname__}",
        traceback=f"{why}\n",
    )


# The PeriodicRun job name of the reclaiming below (it enqueues no task).
RECLAIM_JOB = "reclaim lost workers"


@dataclass(frozen=True)
class Reclaimed:
    workers: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    retried: tuple[str, ...] = ()


def reclaim_lost_workers(*, now: datetime, every: float) -> Reclaimed:
    """Take back what workers that stopped beating left: once per period of ``every`` seconds.

    Every live worker's scheduler calls this; the period's ``PeriodicRun``
    row (``RECLAIM_JOB``) lets one of them in, as for the periodic jobs. It
    runs in the scheduler itself rather than as a task, since a task could
    be the very thing a lost worker left running. A worker is lost when it
    did not stop and has not beaten for ``CLAIMGRAPH_HEARTBEAT_STALE_SECONDS``:
    it is marked stopped (a worker that was only late clears that with its
    next heartbeat), the tasks it was running are marked failed
    (``WorkerLost``), and those that were not a periodic job's run are
    enqueued again: every task here recomputes from the records, so a
    second run is harmless, and a periodic job runs again next period.
    """
    stale_after = timedelta(seconds=settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS)
    with transaction.atomic():
        if _claim_period(RECLAIM_JOB, period_start(now, every), now) is None:
            return Reclaimed()
        _forget_old_runs(RECLAIM_JOB)
        lost = tuple(
            WorkerHeartbeat.objects.select_for_update(skip_locked=True)
            .filter(stopped_at__isnull=True, beat_at__lt=now - stale_after)
            .values_list("worker_id", flat=True)
        )
        if not lost:
            return Reclaimed()
        WorkerHeartbeat.objects.filter(worker_id__in=lost).update(stopped_at=now)
        left = tuple(
            str(pk)
            for pk, worker_ids in DBTaskResult.objects.filter(
                status=TaskResultStatus.RUNNING
            ).values_list("pk", "worker_ids")
            if worker_ids and worker_ids[-1] in lost
        )
        fail_abandoned(left, now=now, why="Its worker stopped beating before it finished.")
        periodic = {
            str(pk)
            for pk in PeriodicRun.objects.filter(task_result_id__in=left).values_list(
                "task_result_id", flat=True
            )
        }
        retried = tuple(pk for pk in left if pk not in periodic)
        for pk in retried:
            retry_failed(pk)
    logger.warning(
        "workers %s stopped beating: marked stopped; %d task(s) failed, %d enqueued again",
        ", ".join(lost),
        len(left),
        len(retried),
    )
    return Reclaimed(workers=lost, failed=left, retried=retried)


def retry_failed(task_result_id: str) -> TaskResult:
    """Enqueue again, with the same arguments, the failed task ``task_result_id``.

    The failed result stays as it was, so the failure remains visible in the
    history; the retry is a new task. Raises ``DBTaskResult.DoesNotExist``
    when there is no failed task of that id.
    """
    failed = DBTaskResult.objects.failed().get(pk=task_result_id)
    arguments = failed.args_kwargs
    return failed.task.enqueue(*arguments["args"], **arguments["kwargs"])
