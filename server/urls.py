"""URLs of the Sente server: the API under /api/v1/, the admin, accounts, and the site's pages."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from server.accounts import views as account_views
from server.operations.health import healthz
from server.operations.metrics import metrics

urlpatterns = [
    path("api/v1/", include("server.api.urls")),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("admin/login/", account_views.admin_login),  # the admin's own, rate limited
    path("admin/", admin.site.urls),
    path("accounts/signup/", account_views.signup, name="signup"),
    path("accounts/signup/confirm/<str:token>/", account_views.signup_confirm, name="signup_confirm"),
    path("accounts/login/", account_views.login_page, name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", account_views.password_change, name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("accounts/password/reset/", account_views.password_reset, name="password_reset"),
    path("accounts/password/reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "accounts/reset/<uidb64>/<token>/",
        account_views.password_reset_confirm,  # its new password revokes the client tokens
        name="password_reset_confirm",
    ),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("accounts/", account_views.account, name="account"),
    path("accounts/email/", account_views.email_change, name="email_change"),
    path("accounts/email/confirm/<str:token>/", account_views.email_confirm, name="email_confirm"),
    path("accounts/delete/", account_views.delete_account, name="account_delete"),
    path("accounts/tokens/", account_views.tokens, name="tokens"),
    path("accounts/tokens/<int:pk>/revoke/", account_views.revoke_token, name="token-revoke"),
    path("", include("server.dashboard.urls")),
]
