from django import forms
from django.contrib import admin

from server.notices.models import Announcement, WebhookDelivery


class AnnouncementForm(forms.ModelForm):
    link = forms.URLField(required=False, assume_scheme="https", help_text="where to read more (optional)")

    class Meta:
        model = Announcement
        fields = ("message", "link", "level", "starts_at", "ends_at")


@admin.register(Announcement)
class AnnouncementAdmin(admin.ModelAdmin):
    form = AnnouncementForm
    list_display = ("message", "level", "starts_at", "ends_at", "created_by")
    list_filter = ("level",)
    fields = ("message", "link", "level", "starts_at", "ends_at")

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "run", "status", "attempts", "url", "next_attempt_at")
    list_filter = ("status", "run")
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]

    def has_add_permission(self, request):
        return False
