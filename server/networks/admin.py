from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm

from server.networks.models import Network
from server.ratings.promotion import staff_decision


class NoteActionForm(ActionForm):
    note = forms.CharField(
        required=False, max_length=2000, label="Note (why)", widget=forms.TextInput(attrs={"size": 60})
    )


def _decision(action: str, description: str):
    def run(modeladmin, request, queryset):
        note = request.POST.get("note", "").strip()
        for network in queryset:
            staff_decision(network, action, request.user, note)
        modeladmin.message_user(request, f"{queryset.count()} network(s): {description}", messages.SUCCESS)

    run.__name__ = f"force_{action}"
    return admin.action(description=f"{description} (with the note)")(run)


@admin.register(Network)
class NetworkAdmin(admin.ModelAdmin):
    list_display = ("name", "run", "state", "released", "size_name", "train_step", "rows_seen", "created_at")
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
    actions = [
        _decision("accept", "accept"),
        _decision("reject", "reject"),
        _decision("release", "release"),
        _decision("retire", "retire"),
    ]
