"""The admission functions, triggers and view from their files in ``admissions/sql/``.

From here on the current text of each lives in its file, not in the
migrations before this one (see ``claimgraph_site.lib.sqlfiles``).
"""

from django.db import migrations

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("admissions", "0008_evidence_check_without_raw_sql")]

    operations = [
        RunSQLFile("admissions", "append_only.sql"),
        RunSQLFile("admissions", "state.sql"),
        RunSQLFile("admissions", "status.sql"),
    ]
