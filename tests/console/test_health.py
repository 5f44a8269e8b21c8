"""The health page: stewards see the background work's state; anyone else sees nothing."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memories.maintenance.tasks import enqueue_periodic, record_heartbeat, sweep_stale_slots_task
from memories.store.models import CrawlerRun, DoctorRun
from notifications.worker import PERIODIC_JOBS
from tests.taskqueue import run_queued_tasks

pytestmark = pytest.mark.django_db


def test_a_steward_sees_a_live_worker_the_queue_and_the_last_crawler_run(as_steward):
    record_heartbeat("w1", now=timezone.now())
    queued = sweep_stale_slots_task.enqueue()
    DBTaskResult.objects.filter(pk=queued.id).update(
        enqueued_at=timezone.now() - timedelta(minutes=5)
    )
    CrawlerRun.objects.create(
        started_at=timezone.now(), finished_at=timezone.now(), counts={"decayed": 2}
    )
    response = as_steward.get(reverse("health"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "healthy" in page and "not healthy" not in page
    assert '<span class="count">alive</span>' in page
    assert "oldest queued 5\xa0minutes ago" in page
    assert "<td>decayed</td><td>2</td>" in page
    assert "No crawler run yet" not in page


def test_a_stale_heartbeat_is_shown_as_not_alive(as_steward, settings):
    settings.CLAIMGRAPH_HEARTBEAT_STALE_SECONDS = 60
    record_heartbeat("w1", now=timezone.now() - timedelta(minutes=3))
    page = as_steward.get(reverse("health")).content.decode()
    assert "not healthy" in page
    assert '<span class="count">stale</span>' in page
    assert '<span class="badge status-rejected">stale</span>' in page
    assert "No heartbeat for 18" in page and "(stale after 60 s)." in page
    assert "No crawler run yet." in page


def test_the_page_is_linked_for_stewards_only(as_steward, as_member):
    health = reverse("health")
    assert f'href="{health}"' in as_steward.get(reverse("dashboard")).content.decode()
    assert f'href="{health}"' not in as_member.get(reverse("dashboard")).content.decode()


def test_a_member_gets_a_404(as_member, as_outsider):
    assert as_member.get(reverse("health")).status_code == 404
    assert as_outsider.get(reverse("health")).status_code == 404


def test_the_page_lists_each_periodic_job_with_its_last_runs(as_steward):
    record_heartbeat("w1", now=timezone.now())
    sweep = next(job for job in PERIODIC_JOBS if job.name == "recompute stale truth slots")
    enqueue_periodic(sweep, now=timezone.now())
    run_queued_tasks()
    page = as_steward.get(reverse("health")).content.decode()
    assert 'id="periodic-jobs"' in page
    for job in PERIODIC_JOBS:
        assert job.name.capitalize() in page
    assert '<span class="badge status-admitted">successful</span>' in page
    assert page.count("<p>No run yet.</p>") == len(PERIODIC_JOBS) - 1


def test_the_page_shows_the_last_doctor_run_and_how_to_run_it(as_steward):
    page = as_steward.get(reverse("health")).content.decode()
    assert "The doctor has not run yet." in page and "manage.py doctor" in page
    DoctorRun.objects.create(
        started_at=timezone.now() - timedelta(minutes=10),
        finished_at=timezone.now(),
        violations=[
            {
                "check": "stale-heartbeat",
                "what": "worker w9 has not beaten for 600 s",
                "ids": ["w9"],
                "todo": "Restart it.",
            }
        ],
    )
    page = as_steward.get(reverse("health")).content.decode()
    assert '<span class="badge status-rejected">1 violation</span>' in page
    assert ">Worker w9 has not beaten for 600 s.</td>" in page
    assert "<code>w9</code>" in page and ">Restart it.</td>" in page
    DoctorRun.objects.create(started_at=timezone.now(), finished_at=timezone.now())
    page = as_steward.get(reverse("health")).content.decode()
    assert '<span class="badge status-admitted">no violations</span>' in page
