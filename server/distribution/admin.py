from django.contrib import admin

from server.distribution.models import Task


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "kind",
        "run",
        "user",
        "network",
        "games",
        "games_received",
        "client_version",
        "client_build",
        "created_at",
        "expires_at",
    )
    list_filter = ("kind", "run")
    search_fields = ("id", "user__username", "client_instance_id", "client_build")
    raw_id_fields = ("user", "network", "network_a", "network_b", "settings_version")
    date_hierarchy = "created_at"

    def has_change_permission(self, request, obj=None):
        return False  # the ledger records what happened
