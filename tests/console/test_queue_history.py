"""The dashboard draws each queue's last 30 days from the snapshots of the viewer's scopes only."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from admissions.models import QueueKind, QueueSnapshot
from admissions.snapshots import snapshot_day, take_queue_snapshot
from tests.admissions.conftest import write_fact
from tests.console.conftest import signed_in

pytestmark = pytest.mark.django_db


def record(scope, days_ago: int, sizes: dict[str, int], age_hours: int = 30) -> None:
    day = snapshot_day(timezone.now()) - timedelta(days=days_ago)
    QueueSnapshot.objects.bulk_create(
        QueueSnapshot(
            day=day,
            scope=scope,
            queue=queue,
            size=sizes.get(queue, 0),
            oldest_age_seconds=age_hours * 3_600 if sizes.get(queue) else None,
            taken_at=timezone.now(),
        )
        for queue in QueueKind.values
    )


def charts(user) -> dict[str, str]:
    """Each queue's chart description, as the dashboard's context has it."""
    page = signed_in(user).get(reverse("dashboard"))
    return {queue.name: queue.chart.description for queue in page.context["queues"]}


@pytest.fixture
def history(scope, other_scope) -> None:
    """``project``: 3 candidates today, 2 a week ago; ``elsewhere``: 777 of them, every day."""
    record(scope, 0, {"candidates": 3, "conflicts": 1})
    record(scope, 7, {"candidates": 2})
    for days_ago in range(31):
        record(other_scope, days_ago, {"candidates": 777}, age_hours=24 * 40)


def test_a_member_sees_the_history_of_their_own_scopes_only(history, member):
    drawn = charts(member)
    assert drawn["candidates"] == (
        "3 waiting today, the oldest 30 hours old; 7 days ago 2; at most 3."
        " No snapshot on 29 days of 31."
    )
    assert drawn["conflicts"].startswith("1 waiting today")
    assert drawn["suspended"].startswith("None waiting today")
    page = signed_in(member).get(reverse("dashboard")).text
    assert "777" not in page and "40 days" not in page


def test_a_scope_steward_sees_their_scope_and_an_outsider_only_theirs(
    history, scope_steward, outsider
):
    assert charts(scope_steward)["candidates"].startswith("3 waiting today")
    told = charts(outsider)["candidates"]
    assert told.startswith("777 waiting today, the oldest 40 days old; 30 days ago 777")
    page = signed_in(outsider).get(reverse("dashboard")).text
    assert "3 waiting today" not in page and "30 hours" not in page


def test_a_global_steward_sees_every_scope_summed(history, steward):
    assert charts(steward)["candidates"].startswith(
        "780 waiting today, the oldest 40 days old; 30 days ago 777; at most 780."
    )


def test_each_chart_is_an_image_with_a_title_and_its_words_and_no_inline_style(history, as_member):
    page = as_member.get(reverse("dashboard")).text
    svgs = re.findall(r'<svg class="queue-chart-svg".*?</svg>', page, re.S)
    assert len(svgs) == 4
    for svg in svgs:
        assert 'role="img"' in svg and "<title id=" in svg and "<desc id=" in svg
        assert "style=" not in svg and "<script" not in svg
    assert (
        '<title id="qc-candidates-title">Candidates awaiting a verdict over the last 30 days'
        in page
    )
    assert page.count("3 waiting today, the oldest 30 hours old") == 2  # its <desc> and its caption


def test_before_the_first_snapshot_the_dashboard_says_none_was_taken_yet(as_member, member):
    page = as_member.get(reverse("dashboard")).text
    assert "queue-chart-svg" not in page
    assert page.count("No snapshot in the last 30 days yet") == 4


def test_the_worker_snapshot_is_what_the_chart_draws_today(as_member, member):
    write_fact(member, "Redis", subject="shoply", source_type="session-log")
    take_queue_snapshot(now=timezone.now())
    shown = {queue.name: queue for queue in as_member.get(reverse("dashboard")).context["queues"]}
    assert shown["candidates"].count == 1
    assert shown["candidates"].chart.description.startswith("1 waiting today")
