from django.contrib import admin

from server.ratings.models import Gating, NetworkEvent, Rating, RatingFit


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ("network", "elo", "elo_se", "games", "updated_at")
    search_fields = ("network__name",)
    readonly_fields = ("network", "elo", "elo_se", "games", "updated_at")


@admin.register(RatingFit)
class RatingFitAdmin(admin.ModelAdmin):
    list_display = ("run", "fitted_at", "games", "networks", "iterations", "seconds")
    readonly_fields = list_display


@admin.register(Gating)
class GatingAdmin(admin.ModelAdmin):
    list_display = ("candidate", "opponent", "rule", "wins", "draws", "losses", "decision", "started_at", "decided_at")
    list_filter = ("decision", "rule")
    search_fields = ("candidate__name", "opponent__name")
    readonly_fields = (
        "candidate",
        "opponent",
        "rule",
        "wins",
        "draws",
        "losses",
        "decision",
        "verdict",
        "started_at",
        "decided_at",
    )


@admin.register(NetworkEvent)
class NetworkEventAdmin(admin.ModelAdmin):
    list_display = ("network", "kind", "user", "created_at", "note")
    list_filter = ("kind",)
    search_fields = ("network__name", "note")
    readonly_fields = ("network", "kind", "note", "data", "user", "created_at")
