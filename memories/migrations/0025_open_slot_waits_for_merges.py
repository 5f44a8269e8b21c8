"""``claimgraph_open_slot`` takes its subject's lock shared and re-checks merges (issue 29 §3).

A merge takes that lock exclusively (``memories.write.merges``), so a write
racing a merge never leaves a fact on the entity merged away.
"""

from django.db import migrations

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("memories", "0024_entity_skeletons")]

    operations = [RunSQLFile("memories", "slots.sql")]
