"""The configured vocabulary: predicates and source types, and the choices they use."""

from django.db import models
from django.db.models import Q


class Epistemic(models.TextChoices):
    OBSERVATION = "observation"
    PREFERENCE = "preference"
    COMMITMENT = "commitment"


class Cardinality(models.TextChoices):
    ONE = "one"
    MANY = "many"


class Policy(models.TextChoices):
    SUPERSEDE = "supersede"
    PARALLEL = "parallel"
    REVIEW = "review"


class Predicate(models.Model):
    """Vocabulary: how facts with this predicate compare and collide."""

    name = models.CharField(max_length=200, unique=True)
    cardinality = models.CharField(max_length=10, choices=Cardinality.choices)
    exclusion_group = models.CharField(max_length=100, blank=True)
    default_epistemic = models.CharField(max_length=20, choices=Epistemic.choices)
    policy = models.CharField(max_length=20, choices=Policy.choices)
    event_like = models.BooleanField(default=False)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SourceType(models.Model):
    """Vocabulary: how far a kind of source is trusted and how confident it may be."""

    name = models.CharField(max_length=100, unique=True)
    trust_rank = models.PositiveSmallIntegerField()
    confidence_ceiling = models.FloatField()
    decays = models.BooleanField(
        default=True, help_text="Facts from a source that does not decay keep their confidence."
    )

    class Meta:
        ordering = ["-trust_rank", "name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(confidence_ceiling__gte=0, confidence_ceiling__lte=1),
                name="source_type_ceiling_in_unit_interval",
            )
        ]

    def __str__(self) -> str:
        return self.name
