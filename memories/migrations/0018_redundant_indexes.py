"""No index a write pays for twice, and none for keys that are mostly NULL.

- The conflict members' own indexes on ``conflict_id`` and ``fact_id``: the
  first leads conflict_member_once, the second is conflict_member_fact.
- The audit entries' index on ``scope_id``, which leads audit_scope_latest,
  and the LIKE-ready twins of the ``action`` and ``target_id`` indexes
  (``db_index`` makes one for every text column; both are only compared for
  equality). Their plain indexes are kept, under names of their own.
- The fact's indexes on ``object_ref_id`` and ``superseded_by_id`` become
  partial, over the rows that set them: every new fact added a NULL entry to
  both.

The database side is written out. Django's own ``AlterField`` would also drop
the partial unique index audit_one_revert_per_entry (on ``target_id``) and
not make it again, and it would drop and validate again each foreign key
whose index goes.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# The indexes ``db_index`` made, under the names Django gave them.
DROPPED = {
    "memories_auditentry_action_d1cbc479": 'ON "memories_auditentry" ("action")',
    "memories_auditentry_action_d1cbc479_like": (
        'ON "memories_auditentry" ("action" varchar_pattern_ops)'
    ),
    "memories_auditentry_scope_id_cddf46b8": 'ON "memories_auditentry" ("scope_id")',
    "memories_auditentry_target_id_56e8964a": 'ON "memories_auditentry" ("target_id")',
    "memories_auditentry_target_id_56e8964a_like": (
        'ON "memories_auditentry" ("target_id" varchar_pattern_ops)'
    ),
    "memories_conflictmember_conflict_id_08598e4c": 'ON "memories_conflictmember" ("conflict_id")',
    "memories_conflictmember_fact_id_f1aa0586": 'ON "memories_conflictmember" ("fact_id")',
    "memories_fact_object_ref_id_c32b0bc5": 'ON "memories_fact" ("object_ref_id")',
    "memories_fact_superseded_by_id_3bbce6a1": 'ON "memories_fact" ("superseded_by_id")',
}


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0017_conflict_member_scope"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="auditentry",
                    name="action",
                    field=models.CharField(max_length=50),
                ),
                migrations.AlterField(
                    model_name="auditentry",
                    name="scope",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="audit_entries",
                        to="memories.scope",
                    ),
                ),
                migrations.AlterField(
                    model_name="auditentry",
                    name="target_id",
                    field=models.CharField(max_length=64),
                ),
                migrations.AlterField(
                    model_name="conflictmember",
                    name="conflict",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="members",
                        to="memories.conflict",
                    ),
                ),
                migrations.AlterField(
                    model_name="conflictmember",
                    name="fact",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="conflict_memberships",
                        to="memories.fact",
                    ),
                ),
                migrations.AlterField(
                    model_name="fact",
                    name="object_ref",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="facts_as_object",
                        to="memories.entity",
                    ),
                ),
                migrations.AlterField(
                    model_name="fact",
                    name="superseded_by",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="supersedes",
                        to="memories.fact",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    [f'DROP INDEX "{name}"' for name in DROPPED],
                    [f'CREATE INDEX "{name}" {target}' for name, target in DROPPED.items()],
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="auditentry",
            index=models.Index(fields=["action"], name="audit_action"),
        ),
        migrations.AddIndex(
            model_name="auditentry",
            index=models.Index(fields=["target_id"], name="audit_target"),
        ),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(
                condition=models.Q(("object_ref__isnull", False)),
                fields=["object_ref"],
                name="fact_object_ref",
            ),
        ),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(
                condition=models.Q(("superseded_by__isnull", False)),
                fields=["superseded_by"],
                name="fact_superseded_by",
            ),
        ),
    ]
