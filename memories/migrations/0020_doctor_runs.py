"""The doctor's runs (``manage.py doctor``): when, and the invariants it found broken."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0019_periodic_runs"),
    ]

    operations = [
        migrations.CreateModel(
            name="DoctorRun",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("started_at", models.DateTimeField()),
                ("finished_at", models.DateTimeField()),
                ("violations", models.JSONField(blank=True, default=list)),
                ("capped", models.JSONField(blank=True, default=list)),
            ],
            options={
                "ordering": ["-started_at", "-id"],
            },
        ),
    ]
