"""Periodic jobs run once per period across every worker: ``PeriodicRun``.

The unique (job, period_start) is what lets one worker's enqueue of a period
in and turns away the others' (``memories.tasks.enqueue_periodic``).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_tasks_database", "0021_conditional_partial_index_ordering"),
        ("memories", "0018_redundant_indexes"),
    ]

    operations = [
        migrations.CreateModel(
            name="PeriodicRun",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("job", models.CharField(max_length=100)),
                ("period_start", models.DateTimeField()),
                ("enqueued_at", models.DateTimeField()),
                (
                    "task_result",
                    models.ForeignKey(
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.DB_SET_NULL,
                        related_name="+",
                        to="django_tasks_database.dbtaskresult",
                    ),
                ),
            ],
            options={
                "ordering": ["job", "-period_start"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("job", "period_start"), name="periodic_run_once_per_period"
                    )
                ],
            },
        ),
    ]
