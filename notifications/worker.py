"""Every periodic job a worker runs: the domain's (``admissions.worker``) and the notifications'.

``manage.py worker`` (``notifications/management/commands/worker.py``) runs
them. They are assembled here, at the top of the apps, because the
notifications read every app below them.
"""

from admissions import worker
from memories.maintenance.tasks import PeriodicJob
from notifications.webhook.deliveries import forget_old_deliveries_task

PERIODIC_JOBS: tuple[PeriodicJob, ...] = (
    *worker.PERIODIC_JOBS,
    # The webhook delivery logs' window, kept once a day.
    PeriodicJob("webhook delivery log", forget_old_deliveries_task, lambda: 86_400.0),
)
