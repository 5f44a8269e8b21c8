"""The record trigger keeps ``memories_admittedfact``, the admitted facts the write path reads.

Issue 29 item 8: a candidate never holds up a steward's write, so the write
path (in memories, below this app) must know which standing facts are
admitted. The trigger now adds a fact there when its latest verdict becomes
admitted and removes it when that changes; ``admissions_rebuild_state()``
rebuilds it with the rest. The facts already admitted are filled in here.
"""

from django.db import migrations

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [
        ("admissions", "0012_open_challenges_unevidenced_too"),
        ("memories", "0027_admitted_facts"),
    ]

    operations = [
        RunSQLFile("admissions", "state.sql"),
        migrations.RunSQL(
            "INSERT INTO memories_admittedfact (fact_id, scope_id)"
            " SELECT fact_id, scope_id FROM admissions_factverdict WHERE verdict = 'admitted'"
            " ON CONFLICT (fact_id) DO NOTHING",
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
