"""The background work's own records: worker heartbeats, periodic, crawler and doctor runs."""

from django.db import models
from django_tasks_db.models import DBTaskResult


class WorkerHeartbeat(models.Model):
    """The last sign of life of one task worker process (``manage.py worker``)."""

    worker_id = models.CharField(max_length=64, unique=True)
    host = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField()
    # Set when the worker stopped cleanly: it is gone, not merely late.
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-beat_at"]

    def __str__(self) -> str:
        return f"{self.worker_id} on {self.host}"


class CrawlerRun(models.Model):
    """One pass of the maintenance crawler (SPEC §8): its counts per action and its report."""

    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    report = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"crawler run at {self.started_at:%Y-%m-%d %H:%M}"


class PeriodicRun(models.Model):
    """One period of one periodic job, claimed by the worker that enqueued its run.

    Every worker's scheduler computes the same period from the clock
    (``memories.maintenance.tasks.PeriodicJob.period_start``) and inserts this row with
    ``ON CONFLICT DO NOTHING`` in the transaction that enqueues the task
    (``memories.maintenance.tasks.enqueue_periodic``): the unique key lets one insert of
    a period in, so one task, and the row and its task commit together or
    not at all. Only the latest runs of each job are kept.
    """

    job = models.CharField(max_length=100)
    period_start = models.DateTimeField()
    enqueued_at = models.DateTimeField()
    # Null once django-tasks-db's result is deleted (its prune): the period
    # stays claimed. No index: the table holds a few rows per job.
    task_result = models.ForeignKey(
        DBTaskResult,
        null=True,
        on_delete=models.DB_SET_NULL,
        related_name="+",
        db_index=False,
    )

    class Meta:
        ordering = ["job", "-period_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "period_start"], name="periodic_run_once_per_period"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.job} at {self.period_start:%Y-%m-%d %H:%M:%S}"


class DoctorRun(models.Model):
    """One run of the doctor (``manage.py doctor``): the invariants it found broken.

    ``violations`` lists each as ``{"check", "what", "ids", "todo"}``
    (``memories.maintenance.doctor.Violation``); ``capped`` names the checks that found
    more than a run lists.
    """

    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    violations = models.JSONField(default=list, blank=True)
    capped = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"doctor run at {self.started_at:%Y-%m-%d %H:%M}"
