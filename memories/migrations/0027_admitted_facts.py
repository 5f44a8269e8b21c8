"""Which system facts are admitted, where the write path can read it (issue 29 item 8).

``memories_admittedfact`` is kept by the admissions app's record trigger
(admissions 0013); ``claimgraph_slot_facts`` answers each standing fact's
``candidate`` from it, so a candidate never holds up a steward's write.
"""

import django.db.models.deletion
from django.db import migrations, models

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0026_scope_source_types_by_role'),
    ]

    operations = [
        migrations.CreateModel(
            name='AdmittedFact',
            fields=[
                ('fact', models.OneToOneField(on_delete=django.db.models.deletion.DO_NOTHING, primary_key=True, related_name='+', serialize=False, to='memories.fact')),
                ('scope', models.ForeignKey(on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='memories.scope')),
            ],
        ),
        RunSQLFile("memories", "slots.sql"),
    ]
