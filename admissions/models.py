"""Admission records (SPEC §6), and the small derived state PostgreSQL keeps from them.

A ``Record`` is the only thing a status is made of: an admission (a steward's
verdict), a challenge (anyone's statement that an admitted fact is wrong) or a
refutation (a steward's answer to one named challenge). Records are
append-only *in the database*: PostgreSQL refuses UPDATE, DELETE and TRUNCATE
on the table, and the shape rules below are constraints, not Python checks.

Two rules need more than a CHECK, and live in migration 0002 as composite
foreign keys:

* a record targets a ``system`` fact of its own scope:
  ``(fact_id, fact_bucket, scope_id)`` → ``memories_fact (id, bucket, scope_id)``
  with ``fact_bucket`` fixed to ``'system'`` by a CHECK;
* a refutation names a challenge against the same fact:
  ``(challenge_id, fact_id, challenge_role)`` → ``admissions_record (id,
  fact_id, role)`` with ``challenge_role`` fixed to ``'challenge'``.

The three models after ``Record`` are *derived*: PostgreSQL triggers on the
record table maintain them in the same transaction as each insert (see
``admissions/sql/state.sql``), so any way a record gets in — the actions, a
COPY, a psql session — leaves them right, and they can be rebuilt from the
records at any time with ``SELECT admissions_rebuild_state()``. Python never writes them.
They exist so a status read costs the same whatever the length of the history
(``admissions.selectors`` explains the reads).
"""

import uuid
from datetime import date

import pgtrigger
from django.conf import settings
from django.db import models
from django.db.models import CharField, Exists, F, Func, IntegerField, Max, OuterRef, Q, Sum
from django.db.models.lookups import Exact, GreaterThan

from memories.store.models import Fact, Scope


class Role(models.TextChoices):
    ADMISSION = "admission"
    CHALLENGE = "challenge"
    REFUTATION = "refutation"


class Verdict(models.TextChoices):
    ADMITTED = "admitted"
    REJECTED = "rejected"


class RecordQuerySet(models.QuerySet["Record"]):
    def admissions(self) -> "RecordQuerySet":
        return self.filter(role=Role.ADMISSION)

    def challenges(self) -> "RecordQuerySet":
        return self.filter(role=Role.CHALLENGE)

    def refutations(self) -> "RecordQuerySet":
        return self.filter(role=Role.REFUTATION)

    def open(self) -> "RecordQuerySet":
        """Challenges no refutation names (set membership, never a date comparison).

        Read from ``OpenChallenge``, which the record trigger keeps to exactly
        those: the cost follows the open challenges, not the refuted ones.
        """
        return self.challenges().filter(Exists(self._listed_open()))

    def resolved(self) -> "RecordQuerySet":
        """Challenges a refutation names: the other side of ``open()``."""
        return self.challenges().filter(~Exists(self._listed_open()))

    def with_refuted(self) -> "RecordQuerySet":
        """Annotate ``refuted`` on challenges: a refutation names the challenge."""
        return self.annotate(refuted=~Exists(self._listed_open()))

    @staticmethod
    def _listed_open() -> "models.QuerySet[OpenChallenge]":
        # A semi-join on the derived table's primary key: one probe per
        # challenge read (a fact's few), or the open ones alone hashed.
        return OpenChallenge.objects.filter(challenge=OuterRef("pk"))

    def in_scopes(self, scopes) -> "RecordQuerySet":
        return self.filter(scope__in=scopes)

    def history_order(self) -> "RecordQuerySet":
        """The total order every rule of §6 uses: ``(inserted_at, id)``."""
        return self.order_by("inserted_at", "id")


class Record(models.Model):
    """One admission, challenge or refutation. Never updated, never deleted."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Copied from the fact so per-scope reads need no join; the composite
    # foreign key proves the copy is the fact's own scope.
    # No single-column index on fact or challenge: the composite indexes
    # below lead with them, and this table only grows. The one on scope stays:
    # counting a scope's records is an index-only scan over it.
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="records")
    fact = models.ForeignKey(Fact, on_delete=models.PROTECT, related_name="records", db_index=False)
    # Always "system": present only so the composite foreign key can prove it.
    fact_bucket = models.CharField(max_length=10, default="system", editable=False)
    role = models.CharField(max_length=20, choices=Role.choices)
    # Admissions only; null otherwise (a CHECK ties the two together).
    verdict = models.CharField(  # noqa: DJ001
        max_length=10, choices=Verdict.choices, null=True, blank=True
    )
    ground = models.TextField()
    # Challenges only: a non-empty list of {ref, quote}, or null for an
    # unevidenced challenge. ``[]`` is refused by the database: absence is
    # said as absence.
    evidence = models.JSONField(null=True, blank=True)
    challenge = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="refutations",
        limit_choices_to={"role": Role.CHALLENGE},
        db_index=False,
    )
    # "challenge" on a refutation, null otherwise: the third column of the
    # composite foreign key that proves the named record is a challenge.
    challenge_role = models.CharField(  # noqa: DJ001
        max_length=20, null=True, blank=True, editable=False
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="admission_records"
    )
    inserted_at = models.DateTimeField()

    objects = RecordQuerySet.as_manager()

    class Meta:
        ordering = ["inserted_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(fact_bucket="system"), name="record_targets_system_fact"
            ),
            models.CheckConstraint(
                condition=Q(role__in=["admission", "challenge", "refutation"]),
                name="record_role_known",
            ),
            models.CheckConstraint(
                condition=Q(role="admission", verdict__in=["admitted", "rejected"])
                | (~Q(role="admission") & Q(verdict__isnull=True)),
                name="record_verdict_iff_admission",
            ),
            models.CheckConstraint(
                condition=Q(role="refutation", challenge__isnull=False, challenge_role="challenge")
                | (~Q(role="refutation") & Q(challenge__isnull=True, challenge_role__isnull=True)),
                name="record_challenge_iff_refutation",
            ),
            models.CheckConstraint(
                condition=Q(evidence__isnull=True)
                | Q(
                    Exact(
                        Func(F("evidence"), function="jsonb_typeof", output_field=CharField()),
                        "array",
                    ),
                    GreaterThan(
                        Func(
                            F("evidence"),
                            function="jsonb_array_length",
                            output_field=IntegerField(),
                        ),
                        0,
                    ),
                    role="challenge",
                ),
                name="record_evidence_nonempty_on_challenges_only",
            ),
            models.CheckConstraint(
                condition=~Q(ground__regex=r"^\s*$"), name="record_ground_required"
            ),
            # The target of the composite foreign key of refutations.
            models.UniqueConstraint(
                fields=["id", "fact", "role"], name="record_id_fact_role_unique"
            ),
        ]
        indexes = [
            # A fact's history, oldest first (fact page, one-fact status).
            models.Index(fields=["fact", "inserted_at", "id"], name="record_fact_history"),
            # "Is this challenge refuted?": an anti-join on refutations.
            models.Index(
                fields=["challenge"],
                name="record_refutation_of",
                condition=Q(role="refutation"),
            ),
            # A scope's history in order (the as-known-at fold, audit reads).
            models.Index(fields=["scope", "inserted_at", "id"], name="record_scope_history"),
            # One account's challenges (the Challenges list).
            models.Index(
                fields=["author", "inserted_at"],
                name="record_challenges_by_author",
                condition=Q(role="challenge"),
            ),
            # Challenges of every scope in filing order (the Challenges list,
            # the dashboard's oldest), read in order and stopped at the page's end.
            models.Index(
                fields=["inserted_at", "id"],
                name="record_challenges_in_order",
                condition=Q(role="challenge"),
            ),
        ]
        triggers = [
            # Row-level: PostgreSQL refuses every UPDATE and DELETE. TRUNCATE
            # fires no row trigger; its statement-level guard is in 0002.
            pgtrigger.Protect(name="append_only", operation=pgtrigger.Update | pgtrigger.Delete),
        ]

    def __str__(self) -> str:
        if self.role == Role.ADMISSION:
            return f"{self.verdict} {self.fact_id}"
        return f"{self.role} {self.fact_id}"

    @property
    def evidenced(self) -> bool:
        return self.role == Role.CHALLENGE and bool(self.evidence)


# --- derived state (maintained by triggers, never written by Python) ------------------


class FactVerdict(models.Model):
    """A system fact's latest admission record, by ``(inserted_at, id)`` (rule 1)."""

    fact = models.OneToOneField(
        Fact, primary_key=True, on_delete=models.DO_NOTHING, related_name="admission_verdict"
    )
    scope = models.ForeignKey(Scope, on_delete=models.DO_NOTHING, related_name="+")
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    record = models.OneToOneField(Record, on_delete=models.DO_NOTHING, related_name="+")
    decided_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["scope", "verdict"], name="fact_verdict_by_scope")]

    def __str__(self) -> str:
        return f"{self.fact_id}: {self.verdict}"


class OpenChallenge(models.Model):
    """A challenge no refutation names yet (rule 4), flagged for rules 2 and 3.

    Every open challenge is here, evidenced or not, so the open ones are found
    without walking past the refuted ones; the rules of status read only the
    evidenced rows, and the rank of rule 6 only those whose fact is admitted.
    """

    challenge = models.OneToOneField(
        Record, primary_key=True, on_delete=models.DO_NOTHING, related_name="+"
    )
    scope = models.ForeignKey(Scope, on_delete=models.DO_NOTHING, related_name="+")
    fact = models.ForeignKey(Fact, on_delete=models.DO_NOTHING, related_name="+")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING, related_name="+"
    )
    inserted_at = models.DateTimeField()
    # Whether the challenge carries evidence: only an evidenced one suspends (rule 3).
    evidenced = models.BooleanField()
    # Whether the challenged fact's latest verdict is ``admitted``: only then
    # does the challenge count (rule 2). The trigger changes it with the verdict.
    fact_admitted = models.BooleanField()

    class Meta:
        indexes = [
            # One account's open challenges in the order the cap ranks them.
            models.Index(
                fields=["scope", "author", "inserted_at", "challenge"],
                name="open_challenge_rank",
            ),
            models.Index(fields=["fact"], name="open_challenge_fact"),
            # Every scope's open challenges in filing order (the dashboard, the
            # Challenges list), read in order and stopped at the page's end.
            models.Index(fields=["inserted_at", "challenge"], name="open_challenge_in_order"),
            # The challenges rule 6 ranks, in the order of the rank view's
            # DISTINCT ON: the view reads them in order, and them alone.
            models.Index(
                fields=["scope", "author", "fact", "inserted_at", "challenge"],
                name="open_challenge_ranked",
                condition=Q(evidenced=True, fact_admitted=True),
            ),
        ]

    def __str__(self) -> str:
        return str(self.challenge_id)

    def shown(self) -> Record:
        """The challenge record, marked as the lists of challenges mark an open one."""
        record = self.challenge
        record.refuted = False
        return record


class ScopeTally(models.Model):
    """A: how many system facts of the scope have ``admitted`` as latest verdict (rule 6)."""

    scope = models.OneToOneField(
        Scope, primary_key=True, on_delete=models.DO_NOTHING, related_name="+"
    )
    admitted = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(admitted__gte=0), name="scope_tally_not_negative")
        ]

    def __str__(self) -> str:
        return f"{self.scope_id}: {self.admitted} admitted"


class ChallengeRank(models.Model):
    """A read-only view: each account's earliest open evidenced challenge per admitted fact.

    ``position`` is the challenge's place among that account's, by
    ``(inserted_at, id)``; it takes effect when ``position <= cap``, where
    ``cap = ceil(share% * admitted)`` (rule 6). The share is a Django
    setting, so the comparison is made by ``admissions.selectors``, not here.
    """

    challenge = models.OneToOneField(
        Record, primary_key=True, on_delete=models.DO_NOTHING, related_name="+"
    )
    scope = models.ForeignKey(Scope, on_delete=models.DO_NOTHING, related_name="+")
    fact = models.ForeignKey(Fact, on_delete=models.DO_NOTHING, related_name="+")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.DO_NOTHING, related_name="+"
    )
    inserted_at = models.DateTimeField()
    position = models.PositiveIntegerField()
    admitted = models.PositiveIntegerField()

    class Meta:
        managed = False
        db_table = "admissions_challenge_rank"

    def __str__(self) -> str:
        return f"{self.challenge_id} #{self.position}"


class QueueKind(models.TextChoices):
    """The review queues (``admissions.queues`` counts them), with the dashboard's labels."""

    CONFLICTS = "conflicts", "Open conflicts"
    CANDIDATES = "candidates", "Candidates awaiting a verdict"
    CHALLENGES = "challenges", "Open challenges"
    SUSPENDED = "suspended", "Suspended facts"


class QueueSnapshotQuerySet(models.QuerySet["QueueSnapshot"]):
    def daily_totals(self, scopes, *, since: date) -> "models.QuerySet":
        """Per queue and day from ``since`` on, over ``scopes``: the sizes summed, the oldest age.

        A day with no row is absent, never a zero: the worker did not take
        that day's snapshot, and nobody knows what waited then.
        """
        return (
            self.filter(scope__in=scopes, day__gte=since)
            .values("queue", "day")
            .annotate(size=Sum("size"), oldest_age_seconds=Max("oldest_age_seconds"))
            .order_by("queue", "day")
        )


class QueueSnapshot(models.Model):
    """How many items of one queue of one scope waited on one day, and the oldest one's age.

    Taken by the worker once a day (``admissions.snapshots``) with the
    dashboard's own count (``admissions.queues.waiting``), and drawn on the
    dashboard as the last 30 days. The first reading of a day stands
    (``ON CONFLICT DO NOTHING``): see ``admissions.snapshots`` for why.
    """

    day = models.DateField()
    scope = models.ForeignKey(Scope, on_delete=models.CASCADE, related_name="+")
    queue = models.CharField(max_length=20, choices=QueueKind.choices)
    size = models.PositiveIntegerField()
    # Null exactly when the queue was empty: an empty queue has no oldest item.
    oldest_age_seconds = models.PositiveBigIntegerField(null=True, blank=True)
    taken_at = models.DateTimeField()

    objects = QueueSnapshotQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["day", "scope", "queue"], name="one_snapshot_a_day"),
            models.CheckConstraint(
                condition=Q(size=0, oldest_age_seconds__isnull=True)
                | Q(size__gt=0, oldest_age_seconds__isnull=False),
                name="snapshot_oldest_age_iff_waiting",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.scope_id} {self.queue}: {self.size}"
