"""Scopes, the security envelopes, and the entities named in them (SPEC §1, §6)."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Value

from memories.core.normalize import name_skeleton, value_key
from memories.store.roles import is_global_steward, readable_scope_ids, steward_scope_ids


class ScopeQuerySet(models.QuerySet["Scope"]):
    def visible_to(self, user) -> "ScopeQuerySet":
        """The scopes ``user`` may read: members, scope stewards, global stewards.

        An inactive or anonymous account sees nothing.
        """
        ids = readable_scope_ids(user)
        return self.all() if ids is None else self.filter(pk__in=ids)

    def stewarded_by(self, user) -> "ScopeQuerySet":
        """The scopes in which ``user`` holds steward authority (none when inactive)."""
        if is_global_steward(user):
            return self.all()
        return self.filter(pk__in=steward_scope_ids(user))


# The source types a member may claim unless an admin says otherwise (issue 29
# item 8): what an agent or a person can say from their own session. The
# decision sources (decision-record, code) and the rest are the stewards'.
MEMBER_SOURCE_TYPES = ("agent-note", "session-log", "user-assertion")


def default_member_source_types() -> list[str]:
    return list(MEMBER_SOURCE_TYPES)


class Scope(models.Model):
    """A security envelope: nothing is compared, linked or shown across scopes."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="member_scopes"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Which source types an account may claim in this scope is part of its
    # role (memories.store.permissions.claimable_source_types). Null: every
    # source type, including ones added to the vocabulary later.
    member_source_types = ArrayField(
        models.CharField(max_length=500),
        null=True,
        blank=True,
        default=default_member_source_types,
        help_text="Source types members may claim, comma-separated; empty for every one.",
    )
    steward_source_types = ArrayField(
        models.CharField(max_length=500),
        null=True,
        blank=True,
        default=None,
        help_text="Source types stewards may claim, comma-separated; empty for every one.",
    )

    objects = ScopeQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        permissions = [("steward_scope", "Can act as a steward of the scope")]

    def __str__(self) -> str:
        return self.name


class Entity(models.Model):
    """A named thing in a scope, found by case-insensitive name or alias."""

    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="entities")
    name = models.CharField(max_length=500)
    key = models.CharField(max_length=500, editable=False)
    type = models.CharField(max_length=100, blank=True)
    aliases = ArrayField(models.CharField(max_length=500), default=list, blank=True)
    alias_keys = ArrayField(
        models.CharField(max_length=500), default=list, blank=True, editable=False
    )
    # The confusable skeletons (memories/core/normalize.py name_skeleton) of the
    # name and of the aliases: a new name that only looks like one of them
    # resolves to this entity (memories/sql/slots.sql claimgraph_entity).
    # Kept by every writer, as the keys are; a row written without them (raw
    # SQL, a benchmark's COPY) is simply never found by its look.
    skeleton = models.TextField(editable=False, db_default="")
    alias_skeletons = ArrayField(
        models.TextField(), default=list, blank=True, editable=False, db_default=Value([])
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "entities"
        ordering = ["scope", "key"]
        constraints = [
            models.UniqueConstraint(fields=["scope", "key"], name="entity_unique_key_in_scope"),
        ]
        # fastupdate off: a pending list would make every lookup by alias scan
        # each entity added since the last vacuum (one per new subject).
        indexes = [
            GinIndex(fields=["alias_keys"], name="entity_alias_keys_gin", fastupdate=False),
            models.Index(fields=["scope", "skeleton"], name="entity_skeleton_in_scope"),
            GinIndex(
                fields=["alias_skeletons"], name="entity_alias_skeletons_gin", fastupdate=False
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def set_keys(self) -> None:
        """Derive the comparison keys from the name and aliases (called by the writers)."""
        self.key = value_key(self.name)
        self.alias_keys = sorted({value_key(alias) for alias in self.aliases} - {self.key})
        self.set_skeletons()

    def set_skeletons(self) -> None:
        """Derive the confusable skeletons from the name and aliases."""
        self.skeleton = name_skeleton(self.name)
        self.alias_skeletons = sorted(
            {name_skeleton(alias) for alias in self.aliases} - {self.skeleton}
        )
