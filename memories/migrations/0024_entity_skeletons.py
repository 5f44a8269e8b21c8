"""Entities keep the confusable skeletons of their name and aliases (issue 29 item 4).

A new name whose key is unknown in its scope but whose skeleton (UTS #39,
``memories.core.normalize.name_skeleton``) is an existing entity's name or
alias skeleton resolves to that entity: ``claimgraph_entity``
(memories/sql/slots.sql, loaded again here) asks the two indexes added here
after the key and the alias keys. The existing rows get their skeletons
before the indexes are built. Entities that already look alike stay
separate: a steward merges them.
"""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
from django.db import migrations, models

from claimgraph_site.lib.sqlfiles import RunSQLFile
from memories.core.normalize import name_skeleton


def fill_skeletons(apps, schema_editor) -> None:
    Entity = apps.get_model("memories", "Entity")
    batch = []
    for entity in Entity.objects.only("id", "name", "aliases").iterator(chunk_size=2000):
        entity.skeleton = name_skeleton(entity.name)
        entity.alias_skeletons = sorted(
            {name_skeleton(alias) for alias in entity.aliases} - {entity.skeleton}
        )
        batch.append(entity)
        if len(batch) == 2000:
            Entity.objects.bulk_update(batch, ["skeleton", "alias_skeletons"])
            batch = []
    Entity.objects.bulk_update(batch, ["skeleton", "alias_skeletons"])


class Migration(migrations.Migration):
    dependencies = [("memories", "0023_fact_entities_in_its_scope")]

    operations = [
        migrations.AddField(
            model_name="entity",
            name="alias_skeletons",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.TextField(),
                blank=True,
                db_default=models.Value([]),
                default=list,
                editable=False,
            ),
        ),
        migrations.AddField(
            model_name="entity",
            name="skeleton",
            field=models.TextField(db_default="", editable=False),
        ),
        migrations.RunPython(fill_skeletons, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="entity",
            index=models.Index(fields=["scope", "skeleton"], name="entity_skeleton_in_scope"),
        ),
        migrations.AddIndex(
            model_name="entity",
            index=django.contrib.postgres.indexes.GinIndex(
                fastupdate=False, fields=["alias_skeletons"], name="entity_alias_skeletons_gin"
            ),
        ),
        RunSQLFile("memories", "slots.sql"),
    ]
