"""Every periodic job a worker runs: the domain's (``admissions.worker``) and the notifications'.

``manage.py worker`` (``notifications/management/commands/worker.py``) runs
them. They are assembled here, at the top of the apps, because the
notifications read every app below them.
"""

from django.conf import settings

from admissions import worker
from memories.maintenance.tasks import PeriodicJob
from notifications.email.sending import send_due_digests_task

PERIODIC_JOBS: tuple[PeriodicJob, ...] = (
    *worker.PERIODIC_JOBS,
    # The hourly and daily email digests that are due (each account's once a period).
    PeriodicJob(
        "email digests",
        send_due_digests_task,
        lambda: settings.CLAIMGRAPH_DIGEST_CHECK_SECONDS,
    ),
)
