"""Each conflict member carries its conflict's scope (docs/scale-out.md, step 2).

Added empty, filled from the conflicts in one statement, then required.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memories", "0016_merge_rule_names_the_scope")]

    operations = [
        migrations.AddField(
            model_name="conflictmember",
            name="scope",
            field=models.ForeignKey(
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="memories.scope",
            ),
        ),
        migrations.RunSQL(
            "UPDATE memories_conflictmember m SET scope_id = c.scope_id"
            " FROM memories_conflict c WHERE c.id = m.conflict_id",
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AlterField(
            model_name="conflictmember",
            name="scope",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="memories.scope",
            ),
        ),
    ]
