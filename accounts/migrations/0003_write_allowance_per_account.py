import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """The write allowance is the account's, not the token's (issue 29 §7).

    The old rows are dropped with their table: an allowance is a minute's
    state (a crash empties it too), so every account starts afresh. The new
    table is UNLOGGED, as 0002 made the old one.
    """

    dependencies = [
        ("accounts", "0002_write_allowance_unlogged"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.DeleteModel(name="WriteAllowance"),
        migrations.CreateModel(
            name="WriteAllowance",
            fields=[
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="write_allowance",
                        serialize=False,
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                ("busy_until", models.DateTimeField()),
            ],
        ),
        migrations.RunSQL(
            "ALTER TABLE accounts_writeallowance SET UNLOGGED",
            reverse_sql="ALTER TABLE accounts_writeallowance SET LOGGED",
        ),
    ]
