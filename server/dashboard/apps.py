from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "server.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
    default_auto_field = "django.db.models.BigAutoField"
