from django import forms
from django.contrib.auth.forms import UserCreationForm

from server.accounts.models import User


class SignUpForm(UserCreationForm):
    email = forms.EmailField(required=True, help_text="for password resets and news about the run; never shown")

    class Meta:
        model = User
        fields = ("username", "email")

    def clean_email(self):
        email = self.cleaned_data["email"].strip()
        if User.objects.filter(email__iexact=email).exists():
            raise forms.ValidationError("an account with this email address exists already")
        return email


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
