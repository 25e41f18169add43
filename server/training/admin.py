from django.contrib import admin

from server.training.models import TrainingLine


@admin.register(TrainingLine)
class TrainingLineAdmin(admin.ModelAdmin):
    list_display = (
        "run",
        "architecture",
        "role",
        "status",
        "samples",
        "rows_total",
        "window_rows",
        "exports",
        "last_export",
        "updated_at",
    )
    list_filter = ("run", "role", "status")
    readonly_fields = [f.name for f in TrainingLine._meta.fields if f.name != "role"]

    def has_add_permission(self, request):
        return False  # the trainer makes its lines
