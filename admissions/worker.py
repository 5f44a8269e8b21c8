"""Every periodic job of the domain: the memory store's and the doctor's.

``manage.py worker`` (``notifications/management/commands/worker.py``) runs
these. They are assembled here, at the top of the domain, because the
doctor reads the admission state, which ``memories`` (where the scheduler
and the store's own jobs live, ``memories.maintenance.worker``) may not import.
"""

from django.conf import settings

from admissions.doctor import doctor_task
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
)
