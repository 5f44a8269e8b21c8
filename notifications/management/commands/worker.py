"""``worker [--interval S] [--heartbeat-seconds S] [--queue-name Q] [--worker-id ID]``.

The background worker (SPEC §7, §12): runs queued tasks and, beside them,
records its heartbeat and enqueues every periodic job (``notifications.worker``:
the domain's and the notifications'; the loop and the scheduler are
``memories.maintenance.worker``'s). A command of this app, the top of the
apps, since its jobs read every app below it. Stops after the running task
on SIGTERM or SIGINT.
"""

import logging

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils.crypto import get_random_string

from memories.maintenance.worker import run_worker
from notifications.worker import PERIODIC_JOBS


def _not_the_start(record: logging.LogRecord) -> bool:
    """db_worker's own "Starting worker …" line at -v 2, which says this command's again."""
    return not record.getMessage().startswith("Starting worker")


def positive_seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = (
        "Run queued background tasks (truth maintenance, the crawler, the adjudicator, the "
        "doctor, notifications), record this worker's heartbeat and enqueue the periodic "
        "jobs. Stops on SIGTERM/SIGINT."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--interval",
            type=positive_seconds,
            default=1.0,
            help="Seconds to wait for work when the queue is empty (default: 1).",
        )
        parser.add_argument(
            "--heartbeat-seconds",
            type=positive_seconds,
            default=None,
            help="Seconds between heartbeats (default: CLAIMGRAPH_HEARTBEAT_SECONDS).",
        )
        parser.add_argument(
            "--queue-name",
            default="default",
            help="The queues to take tasks from, comma-separated (default: default).",
        )
        parser.add_argument(
            "--worker-id",
            default=None,
            help="A name unique among the running workers (default: generated).",
        )
        parser.add_argument(
            "--no-startup-delay",
            action="store_false",
            dest="startup_delay",
            help="Start at once instead of after a random delay of up to a second.",
        )

    def handle(
        self,
        *args,
        interval: float,
        heartbeat_seconds: float | None,
        queue_name: str,
        worker_id: str | None,
        startup_delay: bool,
        verbosity: int,
        **options,
    ) -> None:
        worker_id = worker_id or get_random_string(32)
        if len(worker_id) > 64:
            raise CommandError("--worker-id must be at most 64 characters")
        # What db_worker prints: a task that fails at the default verbosity (a
        # queue whose periodic jobs run every half second stays quiet while
        # idle), each task as it starts and ends with -v 2, more with -v 3.
        level = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO}.get(
            verbosity, logging.DEBUG
        )
        # Its start is said once, by the line below, at every verbosity.
        logging.getLogger("django_tasks_db").addFilter(_not_the_start)
        for name in ("django_tasks_db", "django.tasks"):
            logger = logging.getLogger(name)
            logger.setLevel(level)
            if not logger.handlers:
                logger.addHandler(logging.StreamHandler(self.stdout))
                logger.propagate = False
        self.stdout.write(f"worker {worker_id} starting")
        run_worker(
            worker_id=worker_id,
            heartbeat_seconds=heartbeat_seconds or settings.CLAIMGRAPH_HEARTBEAT_SECONDS,
            interval=interval,
            queue_names=[name.strip() for name in queue_name.split(",") if name.strip()],
            startup_delay=startup_delay,
            jobs=PERIODIC_JOBS,
        )
        self.stdout.write(f"worker {worker_id} stopped")
