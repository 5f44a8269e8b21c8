"""Running queued tasks inside a test, on the test's own database connection.

django-tasks-db's worker loop checks its connection between tasks and would
close the one a test transaction holds; its ``run_task`` is the part that
runs one claimed task and records the result, which is all a test needs.
"""

from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_db.models import DBTaskResult

WORKER_ID = "test-worker"


def run_queued_tasks(*, limit: int = 100) -> int:
    """Run ready tasks, oldest first, including those they enqueue; how many ran."""
    worker = Worker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id=WORKER_ID,
        excluded_queue_names=[],
    )
    for ran in range(limit):
        row = DBTaskResult.objects.ready().order_by("enqueued_at").first()
        if row is None:
            return ran
        row.claim(WORKER_ID)
        worker.run_task(row)
    raise AssertionError(f"the queue did not empty after {limit} tasks")


def task_statuses() -> list[tuple[str, str]]:
    """(task name, status) of every task result, in the order they were enqueued."""
    return [
        (path.rsplit(".", 1)[-1], status)
        for path, status in DBTaskResult.objects.order_by("enqueued_at").values_list(
            "task_path", "status"
        )
    ]


def drain_queue(capture_on_commit) -> None:
    """Run queued tasks and what they enqueue on commit, until the queue is empty.

    ``capture_on_commit`` is pytest-django's ``django_capture_on_commit_callbacks``:
    inside a test's transaction nothing commits, so the callbacks a task
    registers run when each round of tasks ends.
    """
    while True:
        with capture_on_commit(execute=True):
            ran = run_queued_tasks()
        if not ran and not DBTaskResult.objects.ready().exists():
            return
