"""The "stewards" group: its members are stewards of every scope (SPEC §6)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations


def create_group(apps, schema_editor):
    # Permissions are normally created after all migrations ran; this one is
    # needed now, so create the app's permissions first. A migration's app
    # config is a stub without a models module; create_permissions skips
    # those, so mark it as having one for the call.
    config = apps.get_app_config("memories")
    config.models_module = True
    create_permissions(config, apps=apps, verbosity=0)
    config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="stewards")
    group.permissions.add(
        Permission.objects.get(content_type__app_label="memories", codename="steward_scope")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0002_seed_vocabulary"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, migrations.RunPython.noop)]
