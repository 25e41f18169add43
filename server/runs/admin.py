import json

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.utils.html import format_html

from common import boundedjson
from common.settings import RunSettings, SettingsError
from server.runs.models import RUN_FIELDS, Run, RunSettingsVersion, create_run, forget_state, validate_builds


class RunForm(forms.ModelForm):
    settings_document = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 30, "cols": 100, "style": "font-family: monospace"}),
        help_text="the run's settings as JSON; saving a changed document makes a new version",
    )
    settings_note = forms.CharField(required=False, max_length=200, help_text="why the settings changed")
    client_builds = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 40, "style": "font-family: monospace"}),
        help_text="the client builds the run takes, one per line (16 hex digits each, as `python -m client "
        "--version` shows); empty: any build. Tasks and games of other builds are refused (HTTP 426)",
    )

    webhook_url = forms.URLField(
        required=False,
        max_length=500,
        assume_scheme="https",
        help_text=Run._meta.get_field("webhook_url").help_text,
    )
    new_webhook_secret = forms.BooleanField(
        required=False,
        label="New webhook secret",
        help_text="sign the webhook's posts with a new secret from now on (give it to the receiver: the old one "
        "stops working)",
    )

    class Meta:
        model = Run
        fields = (*RUN_FIELDS, "webhook_url")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        current = self.instance.current_settings() if self.instance.pk else None
        document = current.document if current else RunSettings().to_dict()
        self.fields["settings_document"].initial = json.dumps(document, indent=2)
        self.initial["client_builds"] = "\n".join(self.instance.client_builds or [])
        if self.instance.pk and "name" in self.fields:  # not for staff who may only view the run
            self.fields["name"].disabled = True

    def clean_client_builds(self):
        builds = sorted(set(self.cleaned_data["client_builds"].replace(",", " ").split()))
        validate_builds(builds)
        return builds

    def clean_settings_document(self):
        text = self.cleaned_data["settings_document"]
        try:
            document = boundedjson.loads(text)
        except boundedjson.JSONError as e:
            raise forms.ValidationError(f"not valid JSON: {e}") from None
        try:
            return RunSettings.from_dict(document).to_dict()
        except SettingsError as e:
            raise forms.ValidationError(str(e)) from None


class RunSettingsVersionInline(admin.TabularInline):
    model = RunSettingsVersion
    fields = ("version", "created_at", "created_by", "note")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    form = RunForm
    list_display = ("name", "status", "min_client_version", "max_client_version", "created_at")
    list_filter = ("status",)
    search_fields = ("name",)
    inlines = [RunSettingsVersionInline]
    readonly_fields = ("webhook_signing_secret",)

    def get_readonly_fields(self, request, obj=None):
        """The webhook secret's value only for staff who may change runs (who could make a new one
        anyway); staff who may only view them see whether one is set."""
        if self.has_change_permission(request, obj):
            return self.readonly_fields
        return ("webhook_secret_set",)

    @admin.display(description="webhook secret")
    def webhook_signing_secret(self, run: Run) -> str:
        if not run.webhook_secret:
            return "none: made when a webhook URL is saved"
        return format_html(
            "<code>{}</code><br>the receiver checks each post's signature with it (Standard Webhooks; "
            "docs/website.md, Announcements, feeds and webhooks)",
            run.webhook_secret,
        )

    @admin.display(description="webhook secret")
    def webhook_secret_set(self, run: Run) -> str:
        if not run.webhook_secret:
            return "none: made when a webhook URL is saved"
        return "set (shown only to staff who may change runs)"

    def save_model(self, request, obj, form, change):
        document = form.cleaned_data["settings_document"]
        note = form.cleaned_data.get("settings_note", "")
        if not change:
            run = create_run(
                obj.name,
                document,
                obj.description,
                request.user,
                obj.min_client_version,
                obj.max_client_version,
                obj.client_builds,
            )
            obj.pk = run.pk
            obj.status = run.status
            obj.keep_webhook_secret()
            Run.objects.filter(pk=run.pk).update(
                status=form.cleaned_data["status"], webhook_url=obj.webhook_url, webhook_secret=obj.webhook_secret
            )
            return
        obj.keep_webhook_secret(new=form.cleaned_data.get("new_webhook_secret", False))
        if obj.webhook_url and obj.webhook_url_changed():
            messages.warning(
                request,
                "the webhook URL changed, so its posts are signed with a new secret from now on: give the "
                "receiver the one shown on this page (posts still pending to the old URL are given up)",
            )
        super().save_model(request, obj, form, change)
        transaction.on_commit(forget_state)  # the task requests of this process see the change at once
        before = obj.current_settings()
        version = obj.set_settings(document, user=request.user, note=note)
        if before is None or version.pk != before.pk:
            messages.info(request, f"settings saved as version {version.version}")


@admin.register(RunSettingsVersion)
class RunSettingsVersionAdmin(admin.ModelAdmin):
    list_display = ("run", "version", "created_at", "created_by", "note")
    list_filter = ("run",)
    readonly_fields = ("run", "version", "document", "created_at", "created_by", "note")

    def has_add_permission(self, request):
        return False  # versions are made by editing the run

    def has_change_permission(self, request, obj=None):
        return False
