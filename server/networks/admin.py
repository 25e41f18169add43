from django.contrib import admin

from server.networks.models import Network


@admin.register(Network)
class NetworkAdmin(admin.ModelAdmin):
    """The networks in the admin; their decisions (accept, reject, release, ...) are the ratings' actions
    (``server.ratings.admin``)."""

    list_display: tuple[str, ...] = (
        "name",
        "run",
        "state",
        "released",
        "size_name",
        "train_step",
        "rows_seen",
        "created_at",
    )
    list_filter = ("run", "state", "released", "is_random")
    search_fields = ("name", "sha256")
    # State and release change through the actions (each recorded with its note), not by editing.
    readonly_fields = (
        "sha256",
        "size_bytes",
        "architecture",
        "file",
        "created_at",
        "uploaded_by",
        "is_random",
        "state",
        "released",
    )
    raw_id_fields = ("parent",)
