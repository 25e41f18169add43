"""The server's URL table: the API under /api/v1/, the health check and metrics, the admin, the
accounts' pages, and the website's pages (``server.dashboard.urls``)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from server.accounts import views as account_views
from server.accounts.api import TokenView
from server.api.errors import not_found
from server.dashboard import views as dashboard_views
from server.distribution.api import TaskView
from server.games.api import MeView, RatingGameUpload, TrainingGameUpload
from server.networks.api import (
    NetworkCanaryFile,
    NetworkDetail,
    NetworkFile,
    NetworkKataGoDownload,
    NetworkList,
    PickedNetwork,
)
from server.operations.api import (
    ArchiveDisabled,
    ArchiveFileList,
    ArchiveShardFile,
    DataExportFile,
    DataExportList,
    GameExport,
)
from server.operations.health import healthz
from server.operations.metrics import metrics
from server.operations.views import archive as data_archive
from server.operations.views import data
from server.ratings.api import RatingsView
from server.runs.api import CurrentRun, RunDetail, RunList

# The API, mounted at /api/v1/; the busiest endpoints first: URLs are matched in order.
api_urlpatterns = [
    path("tasks/", TaskView.as_view(), name="task-create"),
    path("games/training/", TrainingGameUpload.as_view(), name="game-training-upload"),
    path("games/rating/", RatingGameUpload.as_view(), name="game-rating-upload"),
    path("games/export/", GameExport.as_view(), name="game-export"),
    path("auth/token/", TokenView.as_view(), name="auth-token"),
    path("me/", MeView.as_view(), name="me"),
    path("runs/", RunList.as_view(), name="run-list"),
    path("runs/current/", CurrentRun.as_view(), name="run-current"),
    path("runs/<str:name>/", RunDetail.as_view(), name="run-detail"),
    path("networks/", NetworkList.as_view(), name="network-list"),
    path("networks/strongest/", PickedNetwork.as_view(alias="strongest"), name="network-strongest"),
    path("networks/released/", PickedNetwork.as_view(alias="released"), name="network-released"),
    path("networks/<str:name>/", NetworkDetail.as_view(), name="network-detail"),
    path("networks/<str:name>/file", NetworkFile.as_view(), name="network-file"),
    path("networks/<str:name>/canary", NetworkCanaryFile.as_view(), name="network-canary"),
    path("networks/<str:name>/katago", NetworkKataGoDownload.as_view(), name="network-katago-file"),
    path("ratings/", RatingsView.as_view(), name="ratings"),
    path("exports/", DataExportList.as_view(), name="export-list"),
    path("exports/<int:pk>/file", DataExportFile.as_view(), name="export-file"),
    path("exports/<int:pk>/files/", ArchiveFileList.as_view(), name="export-files"),
    path("exports/<int:pk>/shards/<int:shard>/file", ArchiveShardFile.as_view(), name="export-shard-file"),
    path("exports/<int:pk>/disabled", ArchiveDisabled.as_view(), name="export-disabled"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    re_path(r"^(?P<path>.*)$", not_found),
]

urlpatterns = [
    path("api/v1/", include(api_urlpatterns)),
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
    path("accounts/", dashboard_views.account, name="account"),
    path("accounts/email/", account_views.email_change, name="email_change"),
    path("accounts/email/confirm/<str:token>/", account_views.email_confirm, name="email_confirm"),
    path("accounts/delete/", account_views.delete_account, name="account_delete"),
    path("accounts/tokens/", account_views.tokens, name="tokens"),
    path("accounts/tokens/<int:pk>/revoke/", account_views.revoke_token, name="token-revoke"),
    path("data/", data, name="data"),  # the website's other pages: server.dashboard.urls
    path("data/<int:pk>/", data_archive, name="data-archive"),
    path("", include("server.dashboard.urls")),
]
