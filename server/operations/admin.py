from django.contrib import admin

from server.operations.models import DataExport


@admin.register(DataExport)
class DataExportAdmin(admin.ModelAdmin):
    list_display = ("run", "day", "kind", "games", "size_bytes", "created_at")
    list_filter = ("run", "kind")
    date_hierarchy = "day"

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False  # manage.py export_games makes them
