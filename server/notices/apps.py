from django.apps import AppConfig


class NoticesConfig(AppConfig):
    name = "server.notices"
    label = "notices"
    verbose_name = "Notices"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from server.notices import announcements, webhooks
        from server.notices.models import Announcement
        from server.ratings.models import NetworkEvent

        post_save.connect(webhooks.event_saved, sender=NetworkEvent, dispatch_uid="notices-webhook")
        post_save.connect(announcements.forget, sender=Announcement, dispatch_uid="notices-announcement-saved")
        post_delete.connect(announcements.forget, sender=Announcement, dispatch_uid="notices-announcement-deleted")
