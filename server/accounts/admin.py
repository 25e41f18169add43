from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from server.accounts.models import ClientToken, User


class ClientTokenInline(admin.TabularInline):
    model = ClientToken
    fields = ("name", "key_prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("key_prefix", "created_at", "last_used_at")
    extra = 0
    can_delete = False


@admin.register(User)
class SenteUserAdmin(UserAdmin):
    """The accounts in the admin, with their client tokens (the audit adds its quarantine actions:
    ``server.audit.admin``)."""

    inlines = [ClientTokenInline]
    list_display = ("username", "email", "is_staff", "is_active", "date_joined", "last_login")


@admin.register(ClientToken)
class ClientTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "name", "key_prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("user__username", "name", "key_prefix")
    readonly_fields = ("key_prefix", "key_hash", "created_at", "last_used_at")
    actions = ["revoke"]

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        for token in queryset:
            token.revoke()

    def has_add_permission(self, request):
        return False  # a token's key is only ever shown to its user, when they make it
