"""Each conflict member carries its conflict's scope (docs/scale-out.md, step 2).

Added empty, filled from the conflicts in one statement, then required; and
held to its conflict's by the database: the member's (conflict, scope) must
be a conflict's (id, scope), so no writer can file a member under another
scope. (Its fact's scope is not held so: that would cost the fact table a
unique index on (id, scope_id), paid by every write.)
"""

import django.db.models.deletion
from django.db import migrations, models

MEMBER_IN_ITS_CONFLICTS_SCOPE = """
ALTER TABLE memories_conflict ADD CONSTRAINT conflict_id_scope_key UNIQUE (id, scope_id);
ALTER TABLE memories_conflictmember ADD CONSTRAINT conflict_member_in_its_conflicts_scope
    FOREIGN KEY (conflict_id, scope_id) REFERENCES memories_conflict (id, scope_id);
"""

DROP_MEMBER_IN_ITS_CONFLICTS_SCOPE = """
ALTER TABLE memories_conflictmember DROP CONSTRAINT conflict_member_in_its_conflicts_scope;
ALTER TABLE memories_conflict DROP CONSTRAINT conflict_id_scope_key;
"""


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
        migrations.RunSQL(MEMBER_IN_ITS_CONFLICTS_SCOPE, DROP_MEMBER_IN_ITS_CONFLICTS_SCOPE),
    ]
