"""QueueSnapshot: each review queue of each scope, one row a day (admissions.snapshots)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('admissions', '0013_admitted_facts_for_the_write_path'),
        ('memories', '0029_search'),
    ]

    operations = [
        migrations.CreateModel(
            name='QueueSnapshot',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('day', models.DateField()),
                ('queue', models.CharField(choices=[('conflicts', 'Open conflicts'), ('candidates', 'Candidates awaiting a verdict'), ('challenges', 'Open challenges'), ('suspended', 'Suspended facts')], max_length=20)),
                ('size', models.PositiveIntegerField()),
                ('oldest_age_seconds', models.PositiveBigIntegerField(blank=True, null=True)),
                ('taken_at', models.DateTimeField()),
                ('scope', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memories.scope')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('day', 'scope', 'queue'), name='one_snapshot_a_day'), models.CheckConstraint(condition=models.Q(models.Q(('oldest_age_seconds__isnull', True), ('size', 0)), models.Q(('oldest_age_seconds__isnull', False), ('size__gt', 0)), _connector='OR'), name='snapshot_oldest_age_iff_waiting')],
            },
        ),
    ]
