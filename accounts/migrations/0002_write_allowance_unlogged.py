from django.db import migrations


class Migration(migrations.Migration):
    """Write allowances live in an UNLOGGED table.

    A transaction that changes only unlogged tables commits without waiting
    for a WAL flush, so charging a write costs one round trip instead of a
    disk sync on every API write. The price is fit for a rate limit: after
    a crash PostgreSQL empties the table, which hands every token a fresh
    allowance, and standbys do not see it (only the primary serves writes).
    """

    dependencies = [("accounts", "0001_initial")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE accounts_writeallowance SET UNLOGGED",
            reverse_sql="ALTER TABLE accounts_writeallowance SET LOGGED",
        ),
    ]
