"""An entity by key, else alias, else created, in one statement (``memories/sql/slots.sql``).

``claimgraph_entity`` is the rule's one statement; ``claimgraph_open_slot``
calls it, so an assertion about a new subject opens its slot in one round
trip, and its lookup by alias no longer walks every entity when no alias
matches.
"""

from django.db import migrations

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("memories", "0021_entity_alias_gin_without_pending_list")]

    operations = [RunSQLFile("memories", "slots.sql")]
