"""The demo data fills every queue of the console, and a second run adds nothing."""

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse

from admissions.models import Record
from admissions.selectors import challenge_summary
from memories.models import AuditEntry, Conflict, ConflictKind, Fact, Outcome, Scope

pytestmark = pytest.mark.django_db


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
    [challenger] = [u for u in challenge_summary(Scope.objects.get(name="demo")) if u.queued]
    assert challenger.author_name == "challenger"

    client.force_login(User.objects.get(username="steward"))
    queues = {q.label: q.count for q in client.get(reverse("dashboard")).context["queues"]}
    assert all(count > 0 for count in queues.values()), queues
