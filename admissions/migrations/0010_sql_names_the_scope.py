"""The admission triggers, view and status functions name the scope in every read.

Each statement over a per-scope table now says ``scope_id = ...`` as well as
the fact or challenge it is about, so a store distributed by scope runs it
on one shard (docs/scale-out.md). The answers do not change: a fact's
records, verdict and challenges all carry the fact's own scope.
"""

from django.db import migrations

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("admissions", "0009_sql_files")]

    operations = [
        RunSQLFile("admissions", "state.sql"),
        RunSQLFile("admissions", "status.sql"),
    ]
