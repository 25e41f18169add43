import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("networks", "0006_network_release_notes"),
    ]

    operations = [
        # The rows made before the states were files made on a download: ready ones.
        migrations.AddField(
            model_name="networkkatagofile",
            name="state",
            field=models.CharField(
                choices=[
                    ("queued", "queued: waiting for the background worker"),
                    ("building", "building: a worker is making it"),
                    ("ready", "ready"),
                    ("refused", "refused: KataGo's format cannot hold the network"),
                ],
                default="ready",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="networkkatagofile",
            name="state",
            field=models.CharField(
                choices=[
                    ("queued", "queued: waiting for the background worker"),
                    ("building", "building: a worker is making it"),
                    ("ready", "ready"),
                    ("refused", "refused: KataGo's format cannot hold the network"),
                ],
                default="queued",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="networkkatagofile",
            name="refusal",
            field=models.TextField(blank=True, help_text="why the network cannot be exported (state refused)"),
        ),
        migrations.AddField(
            model_name="networkkatagofile",
            name="queued_at",
            field=models.DateTimeField(
                default=django.utils.timezone.now, help_text="when its making was last queued"
            ),
        ),
        migrations.AddField(
            model_name="networkkatagofile",
            name="started_at",
            field=models.DateTimeField(blank=True, help_text="when a worker took it", null=True),
        ),
        migrations.AddField(
            model_name="networkkatagofile",
            name="finished_at",
            field=models.DateTimeField(blank=True, help_text="when it was made or refused", null=True),
        ),
        migrations.AlterField(
            model_name="networkkatagofile",
            name="version",
            field=models.PositiveIntegerField(blank=True, help_text="KataGo's model version of the file", null=True),
        ),
        migrations.AlterField(
            model_name="networkkatagofile",
            name="file",
            field=models.FileField(blank=True, help_text="the .bin.gz file", max_length=200, upload_to=""),
        ),
        migrations.AlterField(
            model_name="networkkatagofile",
            name="sha256",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AlterField(
            model_name="networkkatagofile",
            name="size_bytes",
            field=models.BigIntegerField(default=0),
        ),
    ]
