from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm

from server.networks.models import Network
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


@admin.register(Network)
class NetworkAdmin(NetworkDecisions, admin.ModelAdmin):
    list_display = (
        "name",
        "run",
        "state",
        "released",
        "gating_in_doubt",
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
    action_form = NoteActionForm
    actions = [decision_action(action) for action in ACTIONS]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("gating")

    @admin.display(description="gating in doubt", boolean=True)
    def gating_in_doubt(self, obj: Network) -> bool:
        """Its gating's decision counted games that no longer count, and its rule would not take it now."""
        gating = getattr(obj, "gating", None)
        return gating is not None and gating.in_doubt
