"""Every entity a write names is held against merges, not only the member's subject (issue 29 §3).

``claimgraph_entity_held`` (memories/sql/slots.sql) is the subject's shared
lock and merge re-check that ``claimgraph_open_slot`` took inline, now one
function that the write path also calls for an entity object and for the
subject of a steward who is not a member, before any slot lock.
"""

from django.db import migrations

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("memories", "0027_admitted_facts")]

    operations = [RunSQLFile("memories", "slots.sql")]
