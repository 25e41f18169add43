"""Web pages of accounts: sign up, and the client tokens of the signed-in user (login, logout and
password change are Django's own views)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from server.accounts.forms import SignUpForm, TokenForm
from server.accounts.models import ClientToken
from server.dashboard.paging import friendly, paginate

TOKENS_PER_PAGE = 25


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    form = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("home")
    return render(request, "accounts/signup.html", {"form": form})


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
@friendly
def tokens(request: HttpRequest) -> HttpResponse:
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
    page, paginator = paginate(request, ClientToken.objects.filter(user=request.user).order_by("-created_at", "-id"),
                               per_page=TOKENS_PER_PAGE)
    return render(request, "accounts/tokens.html", {
        "form": form, "tokens": page.object_list, "page": page, "paginator": paginator, "new": new,
        "server_url": request.build_absolute_uri("/")})


@never_cache
@login_required
@require_POST
def revoke_token(request: HttpRequest, pk: int) -> HttpResponse:
    if not 0 < pk < 2**63:
        raise Http404(f"there is no token {pk}")
    token = get_object_or_404(ClientToken, pk=pk, user=request.user)
    if token.active:
        token.revoke()
        messages.success(request, f"Token “{token.name}” ({token.key_prefix}…) is revoked: clients using it are "
                                  "refused from now on.")
    return redirect("tokens")
