"""Every periodic job of the domain: the memory store's, the doctor's and the queue snapshot's.

``manage.py worker`` (``notifications/management/commands/worker.py``) runs
these. They are assembled here, at the top of the domain, because the
doctor reads the admission state, which ``memories`` (where the scheduler
and the store's own jobs live, ``memories.maintenance.worker``) may not import.
"""

from django.conf import settings

from admissions.doctor import doctor_task
from admissions.snapshots import queue_snapshot_task
from memories.maintenance import worker
from memories.maintenance.tasks import PeriodicJob

PERIODIC_JOBS: tuple[PeriodicJob, ...] = (
    *worker.PERIODIC_JOBS,
    # The doctor, so the Health page shows a recent run. Its first run waits
    # a minute, as the crawler's does, for a fresh ``make run``'s demo data.
    PeriodicJob(
        "doctor",
        doctor_task,
        lambda: settings.CLAIMGRAPH_DOCTOR_SECONDS,
        first_after=60.0,
    ),
    # Today's size and oldest age of every queue, for the dashboard's charts.
    # Its first run comes soon after start (``make run`` loads the demo
    # before the worker starts), so a fresh site shows today's point at once.
    PeriodicJob(
        "queue snapshot",
        queue_snapshot_task,
        lambda: settings.CLAIMGRAPH_QUEUE_SNAPSHOT_SECONDS,
        first_after=10.0,
    ),
)
