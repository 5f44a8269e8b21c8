"""The task worker process: django-tasks-db's worker loop beside a small scheduler.

``run_worker`` runs django-tasks-db's ``Worker`` loop in the main thread (it
claims each ready task with ``SELECT … FOR UPDATE SKIP LOCKED``, so any
number of workers on any number of machines share one queue) and a
:class:`Scheduler` in a second thread, which

- records this worker's heartbeat every ``CLAIMGRAPH_HEARTBEAT_SECONDS``,
  from its own thread so that a long task does not make a live worker look
  dead (the queue's age, in ``memories.maintenance.health``, says when work waits);
- takes back what lost workers left (``memories.maintenance.tasks.reclaim_lost_workers``);
- enqueues its periodic jobs when due: each at the start of each of its
  periods, which are fixed on the clock, so every worker's scheduler wakes
  for a period at the same instant and the database lets one of them
  enqueue its run (``memories.maintenance.tasks.enqueue_periodic``).

:data:`PERIODIC_JOBS` are this app's jobs; ``manage.py worker`` runs them
with the doctor's (``admissions.worker``) and the notifications' (``notifications.worker``).

SIGTERM and SIGINT stop both: the scheduler at once, the worker loop after
the task it is running (a second signal ends that task too). A clean stop
records that the worker stopped, so health reports it gone at once instead
of waiting for its heartbeat to go stale.
"""

import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from types import FrameType

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone
from django_tasks_db.management.commands.db_worker import Worker

from memories.maintenance.crawler import crawl_task
from memories.maintenance.tasks import (
    PeriodicJob,
    enqueue_periodic,
    reclaim_lost_workers,
    recompute_touched_slots_task,
    record_heartbeat,
    record_worker_stopped,
    seconds_to_next_period,
    slots_touched,
    sweep_stale_slots_task,
)

logger = logging.getLogger(__name__)

# The memory store's periodic jobs, and how often. ``admissions.worker`` adds
# the doctor's; ``manage.py worker`` runs them all.
PERIODIC_JOBS: tuple[PeriodicJob, ...] = (
    # The truth slots writes touched, recomputed soon after they commit: one
    # drain at a time, enqueued only when some wait.
    PeriodicJob(
        "recompute touched truth slots",
        recompute_touched_slots_task,
        lambda: settings.CLAIMGRAPH_RECOMPUTE_SECONDS,
        wanted=slots_touched,
    ),
    # The safety net of vocabulary changes: slots marked stale, or computed
    # under semantics their predicate no longer has, are recomputed.
    PeriodicJob(
        "recompute stale truth slots",
        sweep_stale_slots_task,
        lambda: settings.CLAIMGRAPH_STALE_SWEEP_SECONDS,
    ),
    # The maintenance crawler's pass (SPEC §8). Its first run waits a minute,
    # so a fresh ``make run`` has its demo data loaded before the first report.
    PeriodicJob(
        "maintenance crawler",
        crawl_task,
        lambda: settings.CLAIMGRAPH_CRAWL_SECONDS,
        first_after=60.0,
    ),
)


class Scheduler:
    """Heartbeats and periodic jobs for one worker.

    ``tick`` does what is due at the monotonic time ``at``, which is also
    the time of the wall clock ``now``, and is what tests drive; ``run``
    calls it until ``stop``. Waiting is on the monotonic clock, so a clock
    set back does not silence the heartbeat; periods are on the wall clock,
    the one clock all workers share. A failure (the database away for a
    moment) is logged and retried at the next tick rather than ending the
    thread: a scheduler that died silently would leave a worker that looks
    dead while it works.
    """

    def __init__(
        self,
        *,
        worker_id: str,
        heartbeat_seconds: float,
        jobs: Sequence[PeriodicJob],
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.worker_id = worker_id
        self.heartbeat_seconds = heartbeat_seconds
        self.jobs = tuple(jobs)
        self.clock = clock
        self.wall_clock = wall_clock
        self.started_at = wall_clock()
        self._next_beat = 0.0
        # A job is due at start unless it says otherwise: a fresh worker does
        # not wait a whole period before its first sweep.
        started = clock()
        self._next_run = {job.name: started + job.first_after for job in self.jobs}
        self._next_reclaim = started
        self._stopping = threading.Event()

    def tick(self, at: float, now: datetime) -> None:
        if at >= self._next_beat:
            record_heartbeat(self.worker_id, now=now, started_at=self.started_at)
            self._next_beat = at + self.heartbeat_seconds
        if at >= self._next_reclaim:
            reclaim_lost_workers(now=now, every=self._reclaim_every())
            self._next_reclaim = at + seconds_to_next_period(now, self._reclaim_every())
        for job in self.jobs:
            if at >= self._next_run[job.name]:
                enqueue_periodic(job, now=now)
                # Wake when the next period starts on the wall clock: the
                # instant every other worker wakes for it too.
                self._next_run[job.name] = at + job.seconds_to_next_period(now)

    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                close_old_connections()
                try:
                    # Both clocks read together: the wake for the next period
                    # is computed from their pairing.
                    self.tick(self.clock(), self.wall_clock())
                except Exception:
                    logger.exception("the worker's scheduler failed; retrying")
                self._stopping.wait(self._wait())
            record_worker_stopped(self.worker_id, now=timezone.now())
        except Exception:
            logger.exception("could not record that worker %s stopped", self.worker_id)
        finally:
            # This thread's own connection: nobody else will close it.
            connection.close()

    def stop(self) -> None:
        self._stopping.set()

    @staticmethod
    def _reclaim_every() -> float:
        # Twice per staleness: a lost worker is reclaimed at most one and a
        # half staleness periods after its last heartbeat.
        return settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS / 2

    def _wait(self) -> float:
        upcoming = [self._next_beat, self._next_reclaim, *self._next_run.values()]
        return max(0.05, min(upcoming) - self.clock())


def run_worker(
    *,
    worker_id: str,
    heartbeat_seconds: float,
    interval: float = 1.0,
    queue_names: Sequence[str] = ("default",),
    startup_delay: bool = True,
    jobs: Sequence[PeriodicJob],
) -> None:
    """Run the task worker and a scheduler of ``jobs`` until SIGTERM or SIGINT."""
    worker = Worker(
        queue_names=list(queue_names),
        interval=interval,
        batch=False,
        backend_name="default",
        startup_delay=startup_delay,
        max_tasks=None,
        worker_id=worker_id,
        excluded_queue_names=[],
    )
    scheduler = Scheduler(worker_id=worker_id, heartbeat_seconds=heartbeat_seconds, jobs=jobs)
    thread = threading.Thread(target=scheduler.run, name="claimgraph-scheduler", daemon=True)

    def shutdown(signum: int, frame: FrameType | None) -> None:
        scheduler.stop()
        # The worker's own handler: stop after the current task, or exit at
        # once when idle (by raising SystemExit here, in the main thread).
        worker.shutdown(signum, frame)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, shutdown)
    thread.start()
    try:
        worker.run()
    except SystemExit as stop:
        # The worker's handler exits at once when a signal finds it idle;
        # for this function that is the ordinary end. A forced stop (a
        # second signal during a task) exits 1 and stays an exit.
        if stop.code not in (0, None):
            raise
    finally:
        scheduler.stop()
        thread.join(timeout=10)
