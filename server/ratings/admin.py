from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm

from server.networks.admin import NetworkAdmin
from server.networks.models import Network
from server.ratings.models import Gating, NetworkEvent, Rating, RatingFit
from server.ratings.promotion import staff_decision


class NoteActionForm(ActionForm):
    note = forms.CharField(
        required=False, max_length=2000, label="Note (why)", widget=forms.TextInput(attrs={"size": 60})
    )


# What each action is called in the admin, and the right it needs (``Network.Meta.permissions``).
ACTIONS = {
    "accept": ("accept", "decide"),
    "reject": ("reject", "decide"),
    "roll_back": ("roll back (the network before it plays again)", "decide"),
    "gate_again": ("send back to gating (it plays its gating games afresh)", "decide"),
    "confirm": ("confirm the decision in doubt as it stands", "decide"),
    "release": ("release", "release"),
    "retire": ("retire", "release"),
}


class NetworkDecisions:
    """The rights the decision actions declare: ``networks.decide_network`` and
    ``networks.release_network``."""

    def has_decide_permission(self, request) -> bool:
        return request.user.has_perm("networks.decide_network")

    def has_release_permission(self, request) -> bool:
        return request.user.has_perm("networks.release_network")


def decision_action(action: str, network_of=lambda obj: obj):
    """The admin action taking ``action`` on each selected network (``network_of`` finds it in a row
    of another list), with the note of the action form."""
    description, right = ACTIONS[action]

    def run(modeladmin, request, queryset):
        note = request.POST.get("note", "").strip()
        done = 0
        for obj in queryset:
            network = network_of(obj)
            try:
                staff_decision(network, action, request.user, note)
            except ValueError as e:
                modeladmin.message_user(request, str(e), messages.ERROR)
                continue
            done += 1
        modeladmin.message_user(request, f"{done} network(s): {description}", messages.SUCCESS)

    run.__name__ = f"force_{action}"
    return admin.action(description=f"{description[0].upper()}{description[1:]} (with the note)", permissions=[right])(
        run
    )


class DecidedNetworkAdmin(NetworkDecisions, NetworkAdmin):
    """The networks' admin with the staff's decisions as actions, each recorded with its note: it
    replaces the one the networks register."""

    list_display = (*NetworkAdmin.list_display[:4], "gating_in_doubt", *NetworkAdmin.list_display[4:])
    action_form = NoteActionForm
    actions = [decision_action(action) for action in ACTIONS]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("gating")

    @admin.display(description="gating in doubt", boolean=True)
    def gating_in_doubt(self, obj: Network) -> bool:
        """Its gating's decision counted games that no longer count, and its rule would not take it now."""
        gating = getattr(obj, "gating", None)
        return gating is not None and gating.in_doubt


admin.site.unregister(Network)
admin.site.register(Network, DecidedNetworkAdmin)


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
