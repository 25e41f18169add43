from django import forms
from django.contrib.auth import forms as auth_forms

from server.accounts import services
from server.accounts.models import User


class SignUpForm(auth_forms.UserCreationForm):
    """The sign-up's fields and checks. Whether the address has an account is never one of them (a
    link mailed to it makes the account: ``services.sign_up``); the username is public, so a taken
    one is said."""

    email = forms.EmailField(required=True, help_text="for password resets and news about the run; never shown")

    class Meta:
        model = User
        fields = ("username", "email")

    def clean_email(self):
        return self.cleaned_data["email"].strip()


class _RevokesTokens:
    """A password form whose save sets the password with ``services.set_password``: every client
    token of the account is revoked in the same transaction (``revoked``: how many)."""

    user: User
    cleaned_data: dict
    revoked = 0

    def save(self, commit: bool = True) -> User:
        self.revoked = services.set_password(self.user, self.cleaned_data["new_password1"])
        return self.user


class PasswordChangeForm(_RevokesTokens, auth_forms.PasswordChangeForm):
    pass


class SetPasswordForm(_RevokesTokens, auth_forms.SetPasswordForm):
    """The new password of a password reset."""


class PasswordConfirmedForm(forms.Form):
    """A form that asks the signed-in user's password again before it changes the account."""

    password = forms.CharField(
        label="Your password", strip=False, widget=forms.PasswordInput(attrs={"autocomplete": "current-password"})
    )

    def __init__(self, user: User, *args, **kwargs):
        self.user = user
        super().__init__(*args, **kwargs)

    def clean_password(self):
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError("that is not your password")
        return password


class EmailChangeForm(PasswordConfirmedForm):
    email = forms.EmailField(label="New e-mail address", help_text="a link to confirm it is sent there")

    field_order = ["email", "password"]

    def clean_email(self):
        email = self.cleaned_data["email"].strip()
        if email.lower() == (self.user.email or "").lower():
            raise forms.ValidationError("this is your address already")
        if User.objects.filter(email__iexact=email).exclude(pk=self.user.pk).exists():
            raise forms.ValidationError("an account with this email address exists already")
        return email


class DeleteAccountForm(PasswordConfirmedForm):
    confirm = forms.CharField(label="Type your user name to confirm", max_length=150)

    field_order = ["confirm", "password"]

    def clean_confirm(self):
        typed = self.cleaned_data["confirm"].strip()
        if typed != self.user.username:
            raise forms.ValidationError(f"type {self.user.username} to confirm")
        return typed


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        label="Name",
        help_text="what the token is for, e.g. the machine's name",
        widget=forms.TextInput(attrs={"placeholder": "e.g. gpu-box"}),
    )

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("give the token a name, e.g. the machine's name")
        return name
