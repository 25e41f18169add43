"""The API's URL map, mounted at /api/v1/."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from server.accounts.api import MeView, TokenView
from server.api.errors import not_found
from server.distribution.api import TaskView
from server.games.api import RatingGameUpload, TrainingGameUpload
from server.networks.api import (
    NetworkCanaryFile,
    NetworkDetail,
    NetworkFile,
    NetworkKataGoDownload,
    NetworkList,
    PickedNetwork,
)
from server.operations.api import DataExportFile, DataExportList, GameExport
from server.ratings.api import RatingsView
from server.runs.api import CurrentRun, RunDetail, RunList

# The busiest endpoints first: URLs are matched in order.
urlpatterns = [
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
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    re_path(r"^(?P<path>.*)$", not_found),
]
