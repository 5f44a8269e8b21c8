"""Indexes for lists read across scopes in time order: facts by recorded time, open
conflicts by age, entity merge records latest first."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0012_review_claims"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="entitymerge",
            index=models.Index(fields=["at", "id"], name="entity_merge_latest"),
        ),
        migrations.AddIndex(
            model_name="conflict",
            index=models.Index(
                condition=models.Q(("resolved_at__isnull", True)),
                fields=["opened_at", "id"],
                name="conflict_open_oldest",
            ),
        ),
        migrations.AddIndex(
            model_name="fact",
            index=models.Index(fields=["recorded_at", "id"], name="fact_recorded"),
        ),
    ]
