"""Entity merges (SPEC §12), in force as ``memories/sql/merges.sql`` says."""

from django.conf import settings
from django.db import models
from django.db.models import F, Func, Q

from memories.store.models.scopes import Entity, Scope
from memories.store.roles import readable_scope_ids


class MergeInForce(Func):
    """The id of the merge in force for (scope, entity), or NULL (``memories/sql/merges.sql``)."""

    arity = 2
    template = "(SELECT m.id FROM claimgraph_merge_in_force(%(expressions)s) AS m)"
    output_field = models.BigIntegerField()


class EntityMergeQuerySet(models.QuerySet["EntityMerge"]):
    def in_force(self) -> "EntityMergeQuerySet":
        """The merge records in force: for each merged entity, the one it answers by.

        Defined through the SQL function that states the rule
        (``memories/sql/merges.sql``), which the write path calls too.
        """
        return self.filter(pk=MergeInForce("scope_id", "entity_id"))

    def visible_to(self, user) -> "EntityMergeQuerySet":
        """Merge records in the scopes ``user`` may read (see ``ScopeQuerySet.visible_to``)."""
        ids = readable_scope_ids(user)
        return self.all() if ids is None else self.filter(scope_id__in=ids)

    def for_display(self) -> "EntityMergeQuerySet":
        """With what a merge's line shows: its scope, both entities and the steward.

        Not the merge a record undoes: a line only says whether it undoes one
        (``undoes_id``), and a sixth table would double the query's planning.
        """
        return self.select_related("scope", "entity", "into", "actor")


class EntityMerge(models.Model):
    """A steward's record that two entities name the same thing (SPEC §12).

    Append-only: a merge is undone by a later record with ``undoes`` set that
    names the merge it reverses. When a merge is in force is stated once, in
    ``memories/sql/merges.sql``; read it with ``EntityMerge.objects.in_force()``.
    """

    scope = models.ForeignKey(Scope, on_delete=models.PROTECT, related_name="entity_merges")
    entity = models.ForeignKey(Entity, on_delete=models.PROTECT, related_name="merges_from")
    into = models.ForeignKey(Entity, on_delete=models.PROTECT, related_name="merges_into")
    undoes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="undone_by"
    )
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    at = models.DateTimeField()
    reason = models.TextField()

    objects = EntityMergeQuerySet.as_manager()

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(entity=F("into")), name="entity_merge_not_into_itself"
            ),
        ]
        # The latest records first (the entities page): read in order, the
        # entities joined for those few, never a hash of every entity.
        indexes = [models.Index(fields=["at", "id"], name="entity_merge_latest")]

    def __str__(self) -> str:
        return f"{self.entity_id} → {self.into_id}"
