"""The audit in the maintainers' admin: flagged contributors with their evidence, and the
quarantine (one action, on a flag or on an account) and its undo."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from server.accounts.admin import SenteUserAdmin
from server.accounts.models import User
from server.audit.models import AuditScore, Quarantine
from server.audit.services import lift, quarantine


def _reason(score: AuditScore) -> str:
    found = "; ".join(
        f"{e['statistic']} {e['value']} beyond {e['threshold']} ({e['kind']}, "
        + (f"{e['rows']} rows)" if "rows" in e else f"{e['games']} games)")
        for e in score.evidence
    )
    on = f"network {score.network.name}" if score.network is not None else "its rating games"
    return f"audit of {score.created_at:%Y-%m-%d %H:%M} on {on}: {found}"


class QuarantinePermissions:
    """Admin actions that put accounts in quarantine or lift it declare ``permissions=["quarantine"]``
    or ``["lift"]``: the rights to add or to change a quarantine, wherever the action is listed."""

    def has_quarantine_permission(self, request) -> bool:
        return request.user.has_perm("audit.add_quarantine")

    def has_lift_permission(self, request) -> bool:
        return request.user.has_perm("audit.change_quarantine")


@admin.action(
    description="Quarantine the accounts of the selected scores (their games leave training and ratings)",
    permissions=["quarantine"],
)
def quarantine_flagged(modeladmin, request, queryset):
    done = 0
    for score in queryset.select_related("user", "network"):
        quarantine(
            score.user,
            request.user,
            _reason(score) if score.evidence else "quarantined from the audit's list",
            score=score,
        )
        done += 1
    modeladmin.message_user(
        request, f"{done} account(s) in quarantine: their games are out of the training window", messages.SUCCESS
    )


@admin.action(
    description="Put the selected accounts in quarantine (their games leave training and ratings)",
    permissions=["quarantine"],
)
def quarantine_users(modeladmin, request, queryset):
    for user in queryset:
        quarantine(user, request.user, f"quarantined by {request.user.username} from the accounts list")
    modeladmin.message_user(request, f"{queryset.count()} account(s) in quarantine", messages.SUCCESS)


@admin.action(
    description="Lift the quarantine of the selected accounts (their games count again)", permissions=["lift"]
)
def lift_users(modeladmin, request, queryset):
    lifted = sum(lift(user, request.user) for user in queryset)
    modeladmin.message_user(request, f"{lifted} quarantine(s) lifted", messages.SUCCESS)


@admin.register(AuditScore)
class AuditScoreAdmin(QuarantinePermissions, admin.ModelAdmin):
    list_display = ("user", "kind", "network", "verdict", "flagged_on", "rows", "games", "created_at", "in_quarantine")
    list_filter = ("verdict", "kind", "run", "created_at")
    search_fields = ("user__username", "network__name")
    list_select_related = ("user", "network")
    actions = [quarantine_flagged]
    fields = (
        "user",
        "run",
        "kind",
        "network",
        "created_at",
        "verdict",
        "message",
        "games",
        "rows",
        "evidence_table",
        "statistics_table",
        "examples_table",
        "in_quarantine",
    )
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="flagged on")
    def flagged_on(self, obj: AuditScore) -> str:
        return ", ".join(e["statistic"] for e in obj.evidence)

    @admin.display(description="in quarantine", boolean=True)
    def in_quarantine(self, obj: AuditScore) -> bool:
        return obj.user.quarantines.filter(lifted_at__isnull=True).exists()

    @admin.display(description="evidence")
    def evidence_table(self, obj: AuditScore) -> str:
        if not obj.evidence:
            return "nothing beyond a threshold"
        head = mark_safe(
            "<tr><th>statistic</th><th>value</th><th>threshold</th><th>kind</th><th>others' median"
            "</th><th>robust z</th><th>sample</th><th>meaning</th></tr>"
        )
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    e["statistic"],
                    e["value"],
                    e["threshold"],
                    e["kind"],
                    e.get("median", ""),
                    e.get("z", ""),
                    f"{e['rows']} rows" if "rows" in e else f"{e['games']} games",
                    e.get("meaning", "") + (f" ({' vs '.join(e['pair'])})" if "pair" in e else ""),
                )
                for e in obj.evidence
            ),
        )
        return format_html("<table>{}{}</table>", head, rows)

    @admin.display(description="statistics (contributor / others' median)")
    def statistics_table(self, obj: AuditScore) -> str:
        return format_html(
            "<table>{}</table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                ((k, v, obj.population.get(k, {}).get("median", "")) for k, v in obj.statistics.items()),
            ),
        )

    @admin.display(description="rows agreeing least with the network, or the rating games' pairs")
    def examples_table(self, obj: AuditScore) -> str:
        if not obj.examples:
            return "none"
        if obj.kind == AuditScore.Kind.RATING:
            return format_html(
                "<table><tr><th>pair (older, newer)</th><th>games</th><th>score of the newer</th>"
                "<th>others' games</th><th>others' score</th><th>z</th></tr>{}</table>",
                format_html_join(
                    "",
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    (
                        (" vs ".join(x["pair"]), x["games"], x["score"], x["others_games"], x["others_score"], x["z"])
                        for x in obj.examples
                    ),
                ),
            )
        return format_html(
            "<table><tr><th>game</th><th>row</th><th>policy gain</th><th>misses top move</th>"
            "<th>raw value error</th></tr>{}</table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                ((x["game"], x["row"], x["policy_gain"], x["top_missed"], x["raw_error"]) for x in obj.examples),
            ),
        )


@admin.register(Quarantine)
class QuarantineAdmin(QuarantinePermissions, admin.ModelAdmin):
    list_display = ("user", "created_at", "created_by", "lifted_at", "lifted_by", "reason")
    list_filter = ("lifted_at",)
    search_fields = ("user__username", "reason")
    fields = ("user", "reason", "score", "created_at", "created_by", "lifted_at", "lifted_by")
    readonly_fields = ("user", "score", "created_at", "created_by", "lifted_at", "lifted_by")
    actions = ["lift_selected"]

    def has_add_permission(self, request):
        return False  # through the actions, which record who and why

    @admin.action(description="Lift the selected quarantines (the games count again)", permissions=["lift"])
    def lift_selected(self, request, queryset):
        lifted = sum(lift(q.user, request.user) for q in queryset.filter(lifted_at__isnull=True).select_related("user"))
        self.message_user(request, f"{lifted} quarantine(s) lifted", messages.SUCCESS)


class QuarantineUserAdmin(QuarantinePermissions, SenteUserAdmin):
    """The accounts' admin with the quarantine's actions: it replaces the one the accounts register."""

    actions = [quarantine_users, lift_users]


admin.site.unregister(User)
admin.site.register(User, QuarantineUserAdmin)
