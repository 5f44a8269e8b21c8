"""Which source types each role may claim in a scope (issue 29 item 8).

Members default to agent-note, session-log and user-assertion; stewards to
every source type (null). ``claimgraph_open_slot`` answers the two lists with
the scope's row, so the write path checks them without another round trip.
"""

import django.contrib.postgres.fields
from django.db import migrations, models

import memories.store.models.scopes
from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("memories", "0025_open_slot_waits_for_merges")]

    operations = [
        migrations.AddField(
            model_name="scope",
            name="member_source_types",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=500),
                blank=True,
                default=memories.store.models.scopes.default_member_source_types,
                help_text="Source types members may claim, comma-separated; empty for every one.",
                null=True,
                size=None,
            ),
        ),
        migrations.AddField(
            model_name="scope",
            name="steward_source_types",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=500),
                blank=True,
                default=None,
                help_text="Source types stewards may claim, comma-separated; empty for every one.",
                null=True,
                size=None,
            ),
        ),
        RunSQLFile("memories", "slots.sql"),
    ]
