"""The demo data fills every queue of the console, and a second run adds nothing."""

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from admissions.actions import record_verdict
from admissions.models import QueueSnapshot, Record
from admissions.selectors import candidates, challenge_summary
from admissions.snapshots import snapshot_day
from demo.management.commands.seed_demo import DEMO_SCOPE, FLOOD_SCOPE, HISTORY_DAYS, HISTORY_GAPS
from memories.store.models import AuditEntry, Conflict, ConflictKind, Fact, Outcome, Scope

pytestmark = pytest.mark.django_db


def at_the_cap() -> list[str]:
    """The accounts with challenges queued beyond their flood cap, in any scope."""
    return [
        usage.author_name
        for scope in Scope.objects.order_by("name")
        for usage in challenge_summary(scope)
        if usage.queued
    ]


def test_demo_fills_every_queue_and_a_second_run_adds_nothing(client):
    call_command("seed_demo", stdout=StringIO())
    counts = (Fact.objects.count(), Record.objects.count(), AuditEntry.objects.count())
    call_command("seed_demo", stdout=StringIO())
    assert (Fact.objects.count(), Record.objects.count(), AuditEntry.objects.count()) == counts

    kinds = set(Conflict.objects.open().values_list("kind", flat=True))
    assert kinds >= {
        ConflictKind.COMMITMENT,
        ConflictKind.BACKDATED,
        ConflictKind.OUTRANKED,
        ConflictKind.REVENANT,
    }
    assert Conflict.objects.resolved().exists()
    assert Outcome.objects.exists()
    assert at_the_cap() == ["challenger"]
    # An episode to find on the withdraw page's Recent episodes.
    assert Fact.objects.filter(episode="agent-session-12").count() == 2

    client.force_login(User.objects.get(username="steward"))
    queues = {q.label: q.count for q in client.get(reverse("dashboard")).context["queues"]}
    assert all(count > 0 for count in queues.values()), queues


def test_the_challenger_stays_at_its_cap_whatever_the_steward_admits():
    call_command("seed_demo", stdout=StringIO())
    steward = User.objects.get(username="steward")
    waiting = list(candidates(Scope.objects.values("pk")))
    assert len(waiting) > 5
    for fact in waiting:
        record_verdict(actor=steward, fact_id=fact.pk, verdict="admitted", ground="looks right")
    assert not candidates(Scope.objects.values("pk")).exists()
    assert at_the_cap() == ["challenger"]


def test_demo_writes_thirty_past_days_of_queue_history_with_a_gap_and_leaves_today_to_the_worker(
    client,
):
    call_command("seed_demo", stdout=StringIO())
    rows = QueueSnapshot.objects.count()
    call_command("seed_demo", stdout=StringIO())
    assert QueueSnapshot.objects.count() == rows

    today = snapshot_day(timezone.now())
    for scope in Scope.objects.filter(name__in=[DEMO_SCOPE, FLOOD_SCOPE]):
        days = set(QueueSnapshot.objects.filter(scope=scope).values_list("day", flat=True))
        expected = {today - timedelta(days=n) for n in range(1, HISTORY_DAYS + 1)}
        assert days == expected - {today - timedelta(days=n) for n in HISTORY_GAPS}
        assert QueueSnapshot.objects.filter(scope=scope).count() == 4 * len(days)

    client.force_login(User.objects.get(username="steward"))
    drawn = [q.chart for q in client.get(reverse("dashboard")).context["queues"]]
    assert all(len(chart.bars) == HISTORY_DAYS - len(HISTORY_GAPS) for chart in drawn)
    assert all("No snapshot on 3 days of 31." in chart.description for chart in drawn)
