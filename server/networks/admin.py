from django.contrib import admin

from server.networks.models import Network


@admin.register(Network)
class NetworkAdmin(admin.ModelAdmin):
    list_display = ("name", "run", "state", "released", "size_name", "train_step", "rows_seen", "created_at")
    list_filter = ("run", "state", "released", "is_random")
    search_fields = ("name", "sha256")
    readonly_fields = ("sha256", "size_bytes", "architecture", "file", "created_at", "uploaded_by", "is_random")
    raw_id_fields = ("parent",)
