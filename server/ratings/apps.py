from django.apps import AppConfig


class RatingsConfig(AppConfig):
    name = "server.ratings"
    label = "ratings"
    verbose_name = "Ratings"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from server.ratings.promotion import accept_when_ungated
        from server.runs.models import RunSettingsVersion

        post_save.connect(accept_when_ungated, sender=RunSettingsVersion, dispatch_uid="ratings-accept-ungated")
