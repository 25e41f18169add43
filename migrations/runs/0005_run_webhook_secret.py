import base64
import secrets

from django.db import migrations, models

import server.outbound.targets


def give_secrets(apps, schema_editor):
    """A signing secret for every run that has a webhook URL already (what Run.save makes)."""
    Run = apps.get_model("runs", "Run")
    for run in Run.objects.exclude(webhook_url="").filter(webhook_secret=""):
        run.webhook_secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode("ascii")
        run.save(update_fields=["webhook_secret"])


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0004_run_webhook_url"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="webhook_secret",
            field=models.CharField(
                blank=True,
                editable=False,
                help_text="the key the webhook's posts are signed with (Standard Webhooks), made when a URL is set",
                max_length=100,
            ),
        ),
        migrations.AlterField(
            model_name="run",
            name="webhook_url",
            field=models.URLField(
                blank=True,
                help_text="posted (JSON, signed) when a network is accepted, released or rolled back, e.g. a chat "
                "channel's incoming webhook; http or https to a public address; empty: none (docs/website.md)",
                max_length=500,
                validators=[server.outbound.targets.validate_webhook_url],
            ),
        ),
        migrations.RunPython(give_secrets, migrations.RunPython.noop),
    ]
