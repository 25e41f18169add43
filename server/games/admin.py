from django.contrib import admin

from server.games.models import RatingGame, Shard, TrainingGame, UploadRefusal
from server.games.services import set_disabled


class GameAdmin(admin.ModelAdmin):
    list_filter = ("run", "disabled", "winner", "board_x_size")
    search_fields = ("client_game_id", "user__username")
    date_hierarchy = "created_at"
    actions = ["disable", "enable"]

    def get_readonly_fields(self, request, obj=None):
        # Disabled and enabled through the actions, which redo the counts the change moves.
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False  # games come from clients

    @admin.action(
        description="Disable the selected games (keep them out of training, ratings and gating)", permissions=["change"]
    )
    def disable(self, request, queryset):
        changed = set_disabled(queryset, True)
        self.message_user(request, f"{changed} game(s) disabled; the counts they were in are being redone")

    @admin.action(description="Enable the selected games", permissions=["change"])
    def enable(self, request, queryset):
        changed = set_disabled(queryset, False)
        self.message_user(request, f"{changed} game(s) enabled; the counts they belong in are being redone")


@admin.register(TrainingGame)
class TrainingGameAdmin(GameAdmin):
    list_display = (
        "client_game_id",
        "run",
        "network",
        "user",
        "board_x_size",
        "result",
        "moves",
        "rows",
        "created_at",
        "disabled",
    )


@admin.register(RatingGame)
class RatingGameAdmin(GameAdmin):
    list_display = (
        "client_game_id",
        "run",
        "black_network",
        "white_network",
        "user",
        "board_x_size",
        "result",
        "moves",
        "created_at",
        "disabled",
    )


@admin.register(UploadRefusal)
class UploadRefusalAdmin(admin.ModelAdmin):
    list_display = ("created_at", "kind", "user", "code", "field", "message")
    list_filter = ("kind", "code")
    search_fields = ("user__username", "message")
    date_hierarchy = "created_at"

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Shard)
class ShardAdmin(admin.ModelAdmin):
    """The packer's shards, to look at: made and recorded by the packer alone."""

    list_display = ("day", "run", "games", "rows", "size_bytes", "sha256", "created_at")
    list_filter = ("run",)
    search_fields = ("sha256",)
    date_hierarchy = "day"

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # its games name it
