import uuid

from django.db import migrations, models


def give_message_ids(apps, schema_editor):
    """A webhook-id of its own for every delivery recorded before (a callable default gives one to all)."""
    WebhookDelivery = apps.get_model("notices", "WebhookDelivery")
    for delivery in WebhookDelivery.objects.filter(message_id__isnull=True):
        delivery.message_id = uuid.uuid4()
        delivery.save(update_fields=["message_id"])


class Migration(migrations.Migration):

    dependencies = [
        ("notices", "0001_announcements_and_webhooks"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookdelivery",
            name="claimed_until",
            field=models.DateTimeField(blank=True, help_text="an attempt is under way until then", null=True),
        ),
        migrations.AddField(
            model_name="webhookdelivery",
            name="message_id",
            field=models.UUIDField(editable=False, null=True),
        ),
        migrations.RunPython(give_message_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="webhookdelivery",
            name="message_id",
            field=models.UUIDField(
                default=uuid.uuid4, editable=False, help_text="the webhook-id of every attempt", unique=True
            ),
        ),
        migrations.AlterField(
            model_name="webhookdelivery",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "pending: to be posted or retried"),
                    ("delivered", "delivered"),
                    ("failed", "failed: given up after the last attempt, or refused"),
                ],
                default="pending",
                max_length=16,
            ),
        ),
        migrations.AddIndex(
            model_name="webhookdelivery",
            index=models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due"),
        ),
    ]
