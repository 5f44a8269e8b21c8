"""Django admin for the memory store.

Vocabulary and scopes are edited here. Facts and conflicts are shown for
inspection but changed only through the actions (the write path, invalidation,
conflict resolution), so their admin pages are read-only: an edit here would
bypass the rules every other write obeys.
"""

from django.contrib import admin, messages
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from django_tasks_db.admin import DBTaskResultAdmin
from django_tasks_db.models import DBTaskResult
from guardian.admin import GuardedModelAdmin
from guardian.models import GroupObjectPermission, UserObjectPermission

from memories.maintenance.tasks import (
    fail_abandoned,
    mark_predicate_slots_stale,
    record_worker_stopped,
    retry_failed,
)
from memories.store.models import (
    Adjudication,
    Conflict,
    ConflictMember,
    CrawlerRun,
    Entity,
    Fact,
    Outcome,
    Predicate,
    PredicateProposal,
    Scope,
    SourceType,
    TruthSlot,
    WorkerHeartbeat,
)
from memories.store.stewardship import acting
from memories.store.vocabulary import forget_vocabulary
from memories.write.stewardship import may_grant_stewardship

# The predicate fields a truth slot's answer depends on (see
# memories.core.truth.semantics_version): changing one makes its slots stale.
SLOT_SEMANTICS = ("cardinality", "policy", "exclusion_group", "event_like")


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Scope)
class ScopeAdmin(GuardedModelAdmin):
    """Scopes and their members; object permissions (stewardship) for superusers only.

    guardian's object-permission pages let anyone who may change a scope
    grant any permission on it, stewardship included: here only a superuser
    reaches them (as ``memories.write.stewardship`` allows), and each grant
    or revoke they make is an audit entry credited to them (written by the
    permission tables' signals) and an entry in the admin's own history of
    the scope (written here, as every admin change writes one).
    """

    list_display = ["name", "description", "created_at"]
    search_fields = ["name", "description"]
    filter_horizontal = ["members"]

    def obj_perms_manage_view(self, request, object_pk):
        return self._as_granter(request, super().obj_perms_manage_view, object_pk)

    def obj_perms_manage_user_view(self, request, object_pk, user_id):
        return self._as_granter(request, super().obj_perms_manage_user_view, object_pk, user_id)

    def obj_perms_manage_group_view(self, request, object_pk, group_id):
        return self._as_granter(request, super().obj_perms_manage_group_view, object_pk, group_id)

    def _as_granter(self, request, view, *args):
        if not may_grant_stewardship(request.user):
            raise PermissionDenied
        scope_pk = args[0]
        before = _object_permissions(scope_pk)
        with transaction.atomic(), acting(actor=request.user, rule="admin object permissions"):
            answer = view(request, *args)
            after = _object_permissions(scope_pk)
            changes = [("Granted", held) for held in sorted(after - before)]
            changes += [("Revoked", held) for held in sorted(before - after)]
            if changes:
                scope = Scope.objects.get(pk=scope_pk)
                for verb, (holder, codename) in changes:
                    word = "to" if verb == "Granted" else "from"
                    self.log_change(request, scope, f"{verb} {codename} {word} {holder}.")
        return answer


def _object_permissions(scope_pk) -> set[tuple[str, str]]:
    """Who holds which object permission on one scope: (holder, codename) pairs."""
    on_scope = {
        "content_type": ContentType.objects.get_for_model(Scope),
        "object_pk": str(scope_pk),
    }
    users = UserObjectPermission.objects.filter(**on_scope).values_list(
        "user__username", "permission__codename"
    )
    groups = GroupObjectPermission.objects.filter(**on_scope).values_list(
        "group__name", "permission__codename"
    )
    return {*users, *((f"group {name}", codename) for name, codename in groups)}


@admin.register(Entity)
class EntityAdmin(admin.ModelAdmin):
    """An entity's scope and identity (its name and key) are never changed here.

    Moving an entity to another scope would leave its facts on a subject of
    another scope (the database refuses it: migration 0023), and renaming it
    changes which writes find it; an entity changes identity only through
    the domain's actions (a merge). Its type and aliases stay editable.
    """

    list_display = ["name", "type", "scope", "aliases", "created_at"]
    list_filter = ["scope", "type"]
    search_fields = ["name", "key", "aliases"]
    readonly_fields = ["key", "alias_keys", "created_at"]
    identity_fields = ["scope", "name"]

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        return fields if obj is None else [*self.identity_fields, *fields]

    def save_model(self, request, obj, form, change) -> None:
        obj.set_keys()
        super().save_model(request, obj, form, change)


class VocabularyAdmin(admin.ModelAdmin):
    """Vocabulary edits take effect at once in this process (see load_vocabulary)."""

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        forget_vocabulary()

    def delete_model(self, request, obj) -> None:
        super().delete_model(request, obj)
        forget_vocabulary()


@admin.register(Predicate)
class PredicateAdmin(VocabularyAdmin):
    list_display = [
        "name",
        "cardinality",
        "exclusion_group",
        "default_epistemic",
        "policy",
        "event_like",
    ]
    list_filter = ["cardinality", "policy", "default_epistemic", "event_like"]
    search_fields = ["name", "exclusion_group"]

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        changed = [name for name in SLOT_SEMANTICS if name in form.changed_data]
        if change and changed:
            reason = "; ".join(
                f"{name} changed from {form.initial.get(name)!r} to {getattr(obj, name)!r}"
                for name in changed
            )
            mark_predicate_slots_stale(obj, reason)


@admin.register(SourceType)
class SourceTypeAdmin(VocabularyAdmin):
    list_display = ["name", "trust_rank", "confidence_ceiling", "decays"]
    list_filter = ["trust_rank", "decays"]


class ConflictMemberInline(admin.TabularInline):
    model = ConflictMember
    fields = ["fact", "role", "disputes", "kept"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Fact)
class FactAdmin(ReadOnlyAdmin):
    list_display = [
        "subject",
        "predicate",
        "object_display",
        "epistemic",
        "source_type",
        "confidence",
        "bucket",
        "scope",
        "t_valid",
        "t_invalid",
        "recorded_at",
    ]
    list_filter = ["scope", "bucket", "epistemic", "source_type", "predicate", "invalidation_kind"]
    list_select_related = ["subject", "predicate", "object_ref", "source_type", "scope"]
    search_fields = ["subject__name", "object_lit", "object_ref__name", "episode", "statement"]
    date_hierarchy = "recorded_at"
    show_full_result_count = False


@admin.register(Conflict)
class ConflictAdmin(ReadOnlyAdmin):
    list_display = ["kind", "subject", "predicate", "scope", "opened_at", "resolution"]
    list_filter = ["kind", "resolution", "scope"]
    list_select_related = ["subject", "predicate", "scope"]
    search_fields = ["subject__name", "reason"]
    inlines = [ConflictMemberInline]


@admin.register(Outcome)
class OutcomeAdmin(ReadOnlyAdmin):
    list_display = ["outcome", "scope", "reported_by", "reported_at"]
    list_filter = ["scope", "outcome"]


@admin.register(TruthSlot)
class TruthSlotAdmin(ReadOnlyAdmin):
    list_display = ["subject", "predicate", "scope", "decided_by", "stale", "computed_at"]
    list_filter = ["scope", "decided_by", "stale", "predicate"]
    list_select_related = ["subject", "predicate", "scope"]
    search_fields = ["subject__name", "rationale"]


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyAdmin):
    list_display = ["verdict", "confidence", "subject", "predicate", "model", "created_at"]
    list_filter = ["verdict", "model", "scope"]
    list_select_related = ["subject", "predicate"]


@admin.register(PredicateProposal)
class PredicateProposalAdmin(ReadOnlyAdmin):
    list_display = ["predicate", "cardinality", "policy", "event_like", "model", "created_at"]
    list_filter = ["predicate", "model"]


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
    list_display = ["worker_id", "host", "pid", "started_at", "beat_at", "stopped_at"]
    actions = ["mark_stopped"]

    # For a worker that was killed or lost with its machine: it can no longer
    # say so itself, and the doctor reports its silence until someone does.
    @admin.action(description="Mark the selected workers stopped (they are gone)")
    def mark_stopped(self, request, queryset) -> None:
        silent = list(queryset.filter(stopped_at__isnull=True).values_list("worker_id", flat=True))
        for worker_id in silent:
            record_worker_stopped(worker_id, now=timezone.now())
        self.message_user(request, f"Marked {len(silent)} worker(s) stopped.")


@admin.register(CrawlerRun)
class CrawlerRunAdmin(ReadOnlyAdmin):
    list_display = ["started_at", "finished_at", "counts"]


# django-tasks-db's own read-only page for task results, with one action more.
admin.site.unregister(DBTaskResult)


@admin.register(DBTaskResult)
class TaskResultAdmin(DBTaskResultAdmin):
    actions = ["retry", "abandon"]

    @admin.action(
        description="Mark the selected running tasks failed (their worker is gone)",
        permissions=["view"],
    )
    def abandon(self, request, queryset) -> None:
        ids = [str(pk) for pk in queryset.running().values_list("pk", flat=True)]
        failed = fail_abandoned(ids, now=timezone.now())
        self.message_user(
            request, f"Marked {failed} running task(s) failed; retry them to run again."
        )

    @admin.action(description="Retry the selected failed tasks", permissions=["view"])
    def retry(self, request, queryset) -> None:
        failed = list(queryset.failed().values_list("pk", flat=True))
        for task_result_id in failed:
            retry_failed(str(task_result_id))
        skipped = queryset.count() - len(failed)
        self.message_user(request, f"Enqueued {len(failed)} failed task(s) again.")
        if skipped:
            self.message_user(
                request, f"Skipped {skipped} task(s) that had not failed.", messages.WARNING
            )
