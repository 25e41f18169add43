from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "server.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_init, post_save

        from server.accounts.signals import standing_changed
        from server.dashboard import receivers
        from server.games.signals import games_counting_changed

        user = get_user_model()
        post_init.connect(receivers.remember_active, sender=user, dispatch_uid="dashboard-remember-active")
        post_save.connect(receivers.recount_when_active_changes, sender=user, dispatch_uid="dashboard-recount")
        games_counting_changed.connect(receivers.recount_when_games_change, dispatch_uid="dashboard-games-counting")
        standing_changed.connect(receivers.recount_when_standing_changes, dispatch_uid="dashboard-standing")
