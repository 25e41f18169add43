from django.contrib import admin

from server.networks.admin import NetworkDecisions, NoteActionForm, decision_action
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
class GatingAdmin(NetworkDecisions, admin.ModelAdmin):
    list_display = (
        "candidate",
        "opponent",
        "rule",
        "wins",
        "draws",
        "losses",
        "decision",
        "in_doubt",
        "started_at",
        "decided_at",
    )
    list_filter = ("in_doubt", "decision", "rule")
    search_fields = ("candidate__name", "opponent__name")
    readonly_fields = (
        "candidate",
        "opponent",
        "rule",
        "wins",
        "draws",
        "losses",
        "tally",
        "decision",
        "verdict",
        "started_at",
        "decided_at",
        "in_doubt",
        "doubt",
        "settings",
    )
    action_form = NoteActionForm
    actions = [
        decision_action("roll_back", lambda gating: gating.candidate),
        decision_action("gate_again", lambda gating: gating.candidate),
        decision_action("confirm", lambda gating: gating.candidate),
        decision_action("accept", lambda gating: gating.candidate),
        decision_action("reject", lambda gating: gating.candidate),
    ]

    def has_add_permission(self, request):
        return False  # a gating begins when rating games are handed out


@admin.register(NetworkEvent)
class NetworkEventAdmin(admin.ModelAdmin):
    list_display = ("network", "kind", "user", "created_at", "note")
    list_filter = ("kind",)
    search_fields = ("network__name", "note")
    readonly_fields = ("network", "kind", "note", "data", "user", "created_at")
