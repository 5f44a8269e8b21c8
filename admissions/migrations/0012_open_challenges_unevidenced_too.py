"""``admissions_openchallenge`` holds every open challenge, flagged for rules 2 and 3.

It held only the evidenced ones, so the lists of open challenges (the
dashboard's count, the Challenges list) found them in the records by an
anti-join that walked past every refuted challenge; and the rank view of
rule 6 joined every open challenge to the verdicts to keep those of admitted
facts, reading the whole verdict table on each read. Now the trigger adds
unevidenced challenges too, flagged ``evidenced``, and keeps on each row
whether its fact is admitted (``fact_admitted``), so the view reads the open
challenges alone. The derived state is then rebuilt from the records in one
statement: that fills the new rows and flags.
"""

from django.db import migrations, models

from claimgraph_site.lib.sqlfiles import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("admissions", "0011_challenges_in_order_index")]

    operations = [
        # Placeholders for the rows already there; the rebuild below sets both.
        migrations.AddField(
            model_name="openchallenge",
            name="evidenced",
            field=models.BooleanField(default=True),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="openchallenge",
            name="fact_admitted",
            field=models.BooleanField(default=False),
            preserve_default=False,
        ),
        migrations.AddIndex(
            model_name="openchallenge",
            index=models.Index(fields=["inserted_at", "challenge"], name="open_challenge_in_order"),
        ),
        migrations.AddIndex(
            model_name="openchallenge",
            index=models.Index(
                condition=models.Q(("evidenced", True), ("fact_admitted", True)),
                fields=["scope", "author", "fact", "inserted_at", "challenge"],
                name="open_challenge_ranked",
            ),
        ),
        RunSQLFile("admissions", "state.sql"),
        RunSQLFile("admissions", "status.sql"),
        # Not reversible: the view, the trigger and the status functions now
        # read the new columns, and their older text cannot be recovered from
        # the files (claimgraph_site.lib.sqlfiles), so going back would leave
        # them broken. Django refuses to unapply this migration instead.
        migrations.RunSQL("SELECT admissions_rebuild_state()"),
    ]
