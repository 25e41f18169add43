"""The "trainers" group: accounts of the machines that upload trained networks."""

from django.contrib.auth.management import create_permissions
from django.db import migrations


def add_group(apps, schema_editor):
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="trainers")
    group.permissions.add(Permission.objects.get(codename="upload_network", content_type__app_label="networks"))


def remove_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="trainers").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("networks", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(add_group, remove_group)]
