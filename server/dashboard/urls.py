"""The website's pages (mounted at the site's root by server/urls.py)."""

from django.urls import path

from server.dashboard import views
from server.networks.api import PickedNetworkFile
from server.notices.feeds import NetworksFeed, ReleasesFeed

urlpatterns = [
    path("", views.home, name="home"),
    path("live.json", views.live, name="live"),
    path("networks/", views.networks, name="networks"),
    path("networks/strongest/", views.picked_network, {"alias": "strongest"}, name="network-strongest-page"),
    path("networks/released/", views.picked_network, {"alias": "released"}, name="network-released-page"),
    path("networks/strongest/file", PickedNetworkFile.as_view(alias="strongest"), name="strongest-file"),
    path(
        "networks/strongest/katago", PickedNetworkFile.as_view(alias="strongest", katago=True), name="strongest-katago"
    ),
    path("networks/released/file", PickedNetworkFile.as_view(alias="released"), name="released-file"),
    path("networks/released/katago", PickedNetworkFile.as_view(alias="released", katago=True), name="released-katago"),
    path("networks/<str:name>/", views.network_detail, name="network"),
    path("elo/", views.elo, name="elo"),
    path("elo/data.json", views.elo_data, name="elo-data"),
    path("games/", views.games, {"kind": "training"}, name="games"),
    path("games/<int:pk>/", views.game_detail, {"kind": "training"}, name="game"),
    path("games/<int:pk>.sgf", views.game_sgf, {"kind": "training"}, name="game-sgf"),
    path("games/rating/", views.games, {"kind": "rating"}, name="rating-games"),
    path("games/rating/<int:pk>/", views.game_detail, {"kind": "rating"}, name="rating-game"),
    path("games/rating/<int:pk>.sgf", views.game_sgf, {"kind": "rating"}, name="rating-game-sgf"),
    path("contributors/", views.contributors, name="contributors"),
    path("contributors/<str:username>/", views.contributor, name="contributor"),
    path("releases/", views.releases, name="releases"),
    path("feeds/releases.atom", ReleasesFeed(), name="feed-releases"),
    path("feeds/networks.atom", NetworksFeed(), name="feed-networks"),
    path("start/", views.getting_started, name="start"),
]
