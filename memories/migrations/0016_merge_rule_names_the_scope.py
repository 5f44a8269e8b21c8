"""The merge rule takes the entity's scope with the entity (``memories/sql/merges.sql``).

``claimgraph_merge_in_force(p_scope_id, p_entity_id)`` replaces the function
of the entity alone, and the slot function that calls it is loaded again to
call the new one: every read of a merge record names its scope
(docs/scale-out.md).
"""

from django.db import migrations

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("memories", "0015_audit_latest_indexes")]

    operations = [
        RunSQLFile("memories", "merges.sql"),
        RunSQLFile("memories", "slots.sql"),
    ]
