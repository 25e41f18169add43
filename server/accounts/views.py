"""Web pages of accounts: sign up, the account page (a new e-mail address, deletion) and the client
tokens of the signed-in user (login, logout, password change and password reset by e-mail are
Django's own views, with forms whose new password revokes every client token; the forms that check
a password, the admin's login among them, and the password reset form, which sends mail, are rate
limited like the API's token request: :mod:`server.accounts.throttling`).

Sign-up is rate limited per address, and says nothing of whether its e-mail address has an account:
the page answers the same either way, and the mail tells the address's owner what happened."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from datetime import timedelta

from django.contrib import admin, messages
from django.contrib.auth import login, logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from server.accounts import selectors, services
from server.accounts.forms import (
    DeleteAccountForm,
    EmailChangeForm,
    PasswordChangeForm,
    SetPasswordForm,
    SignUpForm,
    TokenForm,
)
from server.accounts.models import ClientToken, User
from server.accounts.throttling import password_check_passed, password_check_wait, signup_wait
from server.paging import friendly, paginate

TOKENS_PER_PAGE = 25
PASSWORDS_REFUSED = "This address tried too many passwords, or too many for this account, in a short time."


def checks_password(username_of: Callable[[HttpRequest], str | None], success_clears: bool = True):
    """A view whose POSTs check a password: each counts on the login counters (the client's address,
    and the address with the username: :func:`password_check_wait`); one over a rate is answered 429
    with ``Retry-After`` and a page saying when to try again, before the password is looked at. With
    ``success_clears``, a POST answered with a redirect (the password was right) forgets the
    username's failures from that address."""

    def decorate(view):
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            username = username_of(request) if request.method == "POST" else None
            if username is not None:
                wait = password_check_wait(request, username)
                if wait is not None:
                    return _too_many(request, wait, "password attempts", PASSWORDS_REFUSED)
            response = view(request, *args, **kwargs)
            if username is not None and success_clears and response.status_code == 302:
                password_check_passed(request, username)
            return response

        return wrapped

    return decorate


def _too_many(request: HttpRequest, wait: float, what: str, reason: str) -> HttpResponse:
    """The 429 page: too many ``what`` (for the reason given); when to try again."""
    seconds = max(1, math.ceil(wait))
    response = render(
        request,
        "registration/throttled.html",
        {"seconds": seconds, "at": timezone.now() + timedelta(seconds=seconds), "what": what, "reason": reason},
        status=429,
    )
    response["Retry-After"] = str(seconds)
    return response


def _typed_username(request: HttpRequest) -> str:
    return request.POST.get("username", "")


def _own_username(request: HttpRequest) -> str | None:
    return request.user.get_username() if request.user.is_authenticated else None


def _typed_email(request: HttpRequest) -> str:
    return request.POST.get("email", "")


login_page = checks_password(_typed_username)(auth_views.LoginView.as_view())
# Each POST sends a mail (when the address is an account's): counted like a password check, and
# never forgotten (the answer is a redirect whatever the address).
password_reset = checks_password(_typed_email, success_clears=False)(auth_views.PasswordResetView.as_view())
password_reset_confirm = auth_views.PasswordResetConfirmView.as_view(form_class=SetPasswordForm)
admin_login = checks_password(_typed_username)(admin.site.login)
password_change = checks_password(_own_username)(auth_views.PasswordChangeView.as_view(form_class=PasswordChangeForm))


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """The sign-up form; a valid one is answered with the same page whether or not its address has
    an account (the mail sent there says which: ``services.sign_up``)."""
    if request.user.is_authenticated:
        return redirect("home")
    if request.method == "POST":
        wait = signup_wait(request)
        if wait is not None:
            return _too_many(request, wait, "sign-ups", "This address sent too many sign-ups in a short time.")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        email = form.cleaned_data["email"]
        services.sign_up(
            form.cleaned_data["username"], email, form.cleaned_data["password1"], request.build_absolute_uri
        )
        return render(request, "accounts/signup_sent.html", {"email": email, "days": services.LINK_LIFE})
    return render(request, "accounts/signup.html", {"form": form})


@never_cache
@require_http_methods(["GET", "POST"])
def signup_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows what the link does (mail scanners open links; they do not press buttons); POST makes
    the account and logs it in."""
    if request.method == "POST":
        try:
            user = services.confirm_sign_up(token)
        except services.SignUpError as e:
            return render(request, "accounts/signup_confirm.html", {"error": str(e)}, status=400)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.username}: your account is made, and you are logged in.")
        return redirect("home")
    return render(request, "accounts/signup_confirm.html", {"token": token})


class AuthenticatedHttpRequest(HttpRequest):
    """The request of a view behind login_required: its user is signed in."""

    user: User


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
@friendly
def tokens(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The user's client tokens, newest first, a page at a time (the client makes one at every login);
    POST makes a new one and answers with its key, shown this once.
    The key is in that answer only: it is never put in the session or anywhere else on the server
    (the database keeps its hash), and no one keeps a copy of the page (never_cache)."""
    form = TokenForm(request.POST or None)
    new = None
    if request.method == "POST" and form.is_valid():
        token, key = ClientToken.issue(request.user, form.cleaned_data["name"])
        new = {"id": token.pk, "name": token.name, "key": key}
        form = TokenForm()  # an empty form for the next token
    page, paginator = paginate(request, selectors.tokens_of(request.user), per_page=TOKENS_PER_PAGE)
    return render(
        request,
        "accounts/tokens.html",
        {
            "form": form,
            "tokens": page.object_list,
            "page": page,
            "paginator": paginator,
            "new": new,
            "server_url": request.build_absolute_uri("/"),
        },
    )


@never_cache
@login_required
@require_POST
def revoke_token(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    if not 0 < pk < 2**63:
        raise Http404(f"there is no token {pk}")
    token = selectors.token_of(request.user, pk)
    if token is None:
        raise Http404(f"there is no token {pk}")
    if token.active:
        token.revoke()
        messages.success(
            request, f"Token “{token.name}” ({token.key_prefix}…) is revoked: clients using it are refused from now on."
        )
    return redirect("tokens")


# --- the account's changes: a new e-mail address, deletion (the page itself: server.dashboard) -----
@never_cache
@login_required
@require_http_methods(["GET", "POST"])
@checks_password(_own_username)
def email_change(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = EmailChangeForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.request_email_change(request.user, form.cleaned_data["email"], request.build_absolute_uri)
        messages.success(
            request,
            f"A link to confirm {form.cleaned_data['email']} is on its way there; "
            f"your address changes when you open it (it works once, within {services.LINK_LIFE}).",
        )
        return redirect("account")
    return render(request, "accounts/email_change.html", {"form": form})


@never_cache
@require_http_methods(["GET", "POST"])
def email_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """GET shows what the link confirms (mail scanners open links; they do not press buttons); POST
    takes the address."""
    if request.method == "POST":
        try:
            user = services.confirm_email_change(token)
        except services.EmailChangeError as e:
            return render(request, "accounts/email_confirm.html", {"error": str(e)}, status=400)
        messages.success(request, f"Your e-mail address is now {user.email}.")
        return redirect("account" if request.user.is_authenticated else "login")
    return render(request, "accounts/email_confirm.html", {"token": token})


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
@checks_password(_own_username)
def delete_account(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = DeleteAccountForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        anonymous = services.delete_account(request.user)
        logout(request)
        messages.success(
            request,
            f"Your account is deleted; its games stay, under the name {anonymous}, and every token is revoked.",
        )
        return redirect("home")
    games = request.user.traininggames.count() + request.user.ratinggames.count()
    return render(request, "accounts/delete.html", {"form": form, "games": games})
