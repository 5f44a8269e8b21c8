"""Truth maintenance's rows (SPEC §7): truth slots, their touched marks, verdicts, proposals."""

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from memories.store.models.facts import Conflict, Fact
from memories.store.models.scopes import Entity, Scope
from memories.store.models.vocabulary import Cardinality, Policy, Predicate


class DecidedBy(models.TextChoices):
    # One value, or values that do not compete: nothing had to be weighed.
    DETECTION = "detection"
    ADJUDICATOR = "adjudicator"
    POLICY = "policy"


class TruthSlotQuerySet(models.QuerySet["TruthSlot"]):
    def in_scope(self, scope: Scope) -> "TruthSlotQuerySet":
        return self.filter(scope=scope)

    def stale(self) -> "TruthSlotQuerySet":
        return self.filter(stale=True)


class TruthSlot(models.Model):
    """The current answer for one (scope, subject, predicate), with how it was reached.

    A materialization, recomputed by ``memories.maintenance.truth`` after the slot's
    claims or its predicate's semantics change; never edited by hand. Each
    entry of ``values`` holds one value: ``object``, ``object_kind``,
    ``object_key``, ``fact_ids``, ``confidence`` (base), ``effective_confidence``,
    ``status`` (``current``, ``superseded``, ``unresolved`` or ``disputed``),
    ``t_valid`` and ``support`` (the claims' evidence merged). What the
    decision called for (supersessions, a conflict) was applied when it was
    computed, and is in the audit log with a rule ``truth: ...``.
    """

    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="truth_slots")
    subject = models.ForeignKey(Entity, on_delete=models.PROTECT, related_name="truth_slots")
    predicate = models.ForeignKey(Predicate, on_delete=models.PROTECT, related_name="truth_slots")
    values = models.JSONField(default=list)
    conflict = models.ForeignKey(
        Conflict, null=True, blank=True, on_delete=models.PROTECT, related_name="truth_slots"
    )
    rationale = models.TextField()
    decided_by = models.CharField(max_length=20, choices=DecidedBy.choices)
    computed_at = models.DateTimeField()
    stale = models.BooleanField(default=False)
    stale_reason = models.TextField(blank=True)
    # memories.core.truth.semantics_version of the predicate it was computed with.
    vocabulary_version = models.CharField(max_length=16)
    # memories.core.truth.claim_set_hash of the live claims it was computed from.
    claim_set_hash = models.CharField(max_length=64)

    objects = TruthSlotQuerySet.as_manager()

    class Meta:
        ordering = ["scope", "subject", "predicate"]
        constraints = [
            models.UniqueConstraint(
                fields=["scope", "subject", "predicate"], name="truth_slot_once_per_slot"
            ),
        ]
        indexes = [
            models.Index(fields=["computed_at"], name="truth_slot_stale", condition=Q(stale=True)),
        ]

    def __str__(self) -> str:
        return f"{self.subject} {self.predicate}"


class TouchedSlot(models.Model):
    """A truth slot whose claims changed since it was last recomputed: the worker's to do.

    Written by ``memories.store.touched.recompute_on_commit`` inside the transaction of
    the change, so it becomes visible when the change commits and vanishes
    with it on a rollback; deleted by the recompute that read the slot's
    claims after it (``memories.maintenance.truth.recompute_slot``). Each new touch of a
    slot already marked counts one more in ``touches``, so a recompute
    deletes the mark only if nobody touched the slot again since it read it
    (not every writer holds the slot's lock: an entity merge does not). The
    slot is named by ids without foreign keys, as a task's arguments are: a
    mark is transient work, and keys would cost three lookups at the commit
    of every write.
    """

    id = models.BigAutoField(primary_key=True)
    scope_id = models.BigIntegerField()
    subject_id = models.BigIntegerField()
    predicate_id = models.BigIntegerField()
    # The first touch since the last recompute: the drain takes the oldest first.
    touched_at = models.DateTimeField(db_default=Now())
    # Not indexed, so counting a touch is an update PostgreSQL keeps on its page.
    touches = models.IntegerField(db_default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scope_id", "subject_id", "predicate_id"], name="touched_slot_once"
            ),
        ]

    def __str__(self) -> str:
        return f"slot {self.scope_id}:{self.subject_id}:{self.predicate_id}"


class VerdictKind(models.TextChoices):
    CORROBORATE = "corroborate"
    SINGLE_WINNER = "single_winner"
    COEXIST = "coexist"
    SUPERSEDE = "supersede"
    NEEDS_REVIEW = "needs_review"


class Adjudication(models.Model):
    """A model's verdict on one claim set, kept so the same set is never asked again.

    Keyed by ``claim_set_hash`` (SHA-256 of the sorted fact ids): claim ids
    are never reused, so an unchanged set finds its verdict here, including
    ``needs_review``. Advice only: acting on it is the judge's, under
    ``memories.core.verdicts.may_act``.
    """

    claim_set_hash = models.CharField(max_length=64, unique=True)
    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="adjudications")
    subject = models.ForeignKey(Entity, on_delete=models.PROTECT, related_name="+")
    predicate = models.ForeignKey(Predicate, on_delete=models.PROTECT, related_name="+")
    verdict = models.CharField(max_length=20, choices=VerdictKind.choices)
    winner = models.ForeignKey(
        Fact, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    confidence = models.FloatField()
    rationale = models.TextField()
    raw_response = models.TextField()
    model = models.CharField(max_length=200)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1),
                name="adjudication_confidence_in_unit_interval",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.verdict} ({self.confidence:.2f})"


class PredicateProposal(models.Model):
    """Semantics an adjudicator proposed for a predicate: recorded, never applied.

    The configured vocabulary changes only through the admin; a proposal is
    advice for whoever looks after it. Blank fields (and a null
    ``event_like``) were not proposed.
    """

    predicate = models.ForeignKey(Predicate, on_delete=models.PROTECT, related_name="proposals")
    adjudication = models.ForeignKey(
        Adjudication, null=True, blank=True, on_delete=models.PROTECT, related_name="proposals"
    )
    status = models.CharField(max_length=20, default="proposed", editable=False)
    cardinality = models.CharField(max_length=10, choices=Cardinality.choices, blank=True)
    policy = models.CharField(max_length=20, choices=Policy.choices, blank=True)
    exclusion_group = models.CharField(max_length=100, blank=True)
    event_like = models.BooleanField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    model = models.CharField(max_length=200)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"proposed semantics for {self.predicate}"
