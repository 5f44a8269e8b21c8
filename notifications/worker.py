"""Every periodic job a worker runs: the domain's (``admissions.worker``) and the notifications'.

``manage.py worker`` (``notifications/management/commands/worker.py``) runs
them. They are assembled here, at the top of the apps, because the
notifications read every app below them.
"""

from django.conf import settings

from admissions import worker
from memories.maintenance.tasks import PeriodicJob
from notifications.email.sending import send_due_digests_task
from notifications.feed import record_events_task
from notifications.watch import record_watch_events_task
from notifications.webhook.deliveries import forget_old_deliveries_task

PERIODIC_JOBS: tuple[PeriodicJob, ...] = (
    *worker.PERIODIC_JOBS,
    # New events read off the records, and handed to every channel.
    PeriodicJob(
        "notifications feed", record_events_task, lambda: settings.CLAIMGRAPH_NOTIFY_SECONDS
    ),
    # The queues' ages, the workers' heartbeats and the doctor's last findings.
    # Its first look waits a minute, as the doctor's does.
    PeriodicJob(
        "notifications watch",
        record_watch_events_task,
        lambda: settings.CLAIMGRAPH_NOTIFY_WATCH_SECONDS,
        first_after=60.0,
    ),
    # The hourly and daily email digests that are due (each account's once a period).
    PeriodicJob(
        "email digests",
        send_due_digests_task,
        lambda: settings.CLAIMGRAPH_DIGEST_CHECK_SECONDS,
    ),
    # The webhook delivery logs' window, kept once a day.
    PeriodicJob("webhook delivery log", forget_old_deliveries_task, lambda: 86_400.0),
)
