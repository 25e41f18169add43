from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "server.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_init, post_save

        from server.dashboard import signals

        user = get_user_model()
        post_init.connect(signals.remember_active, sender=user, dispatch_uid="dashboard-remember-active")
        post_save.connect(signals.recount_when_active_changes, sender=user, dispatch_uid="dashboard-recount")
