"""The write path's SQL functions from their files in ``memories/sql/``.

From here on the current text of each lives in its file, not in the
migrations before this one (see ``claimgraph_site.lib.sqlfiles``). New here:
the merge rule (``claimgraph_merge_in_force``) and
the slot's lock id (``claimgraph_slot_lock_id``), each stated once.
"""

from django.db import migrations

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("memories", "0006_slot_functions")]

    operations = [
        RunSQLFile("memories", "merges.sql"),
        RunSQLFile("memories", "slots.sql"),
    ]
