from django.apps import AppConfig


class NoticesConfig(AppConfig):
    name = "server.notices"
    label = "notices"
    verbose_name = "Notices"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import request_started
        from django.db.models.signals import post_delete, post_save

        from server.notices import announcements, tasks, webhooks
        from server.notices.models import Announcement
        from server.ratings.models import NetworkEvent

        post_save.connect(webhooks.event_saved, sender=NetworkEvent, dispatch_uid="notices-webhook")
        request_started.connect(tasks.request_started, dispatch_uid="notices-webhook-sweep")
        post_save.connect(announcements.forget, sender=Announcement, dispatch_uid="notices-announcement-saved")
        post_delete.connect(announcements.forget, sender=Announcement, dispatch_uid="notices-announcement-deleted")
