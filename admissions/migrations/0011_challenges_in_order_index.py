"""An index of challenges in filing order, for the lists that read every scope's."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("admissions", "0010_sql_names_the_scope"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="record",
            index=models.Index(
                condition=models.Q(("role", "challenge")),
                fields=["inserted_at", "id"],
                name="record_challenges_in_order",
            ),
        ),
    ]
