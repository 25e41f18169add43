from django.apps import AppConfig


class RatingsConfig(AppConfig):
    name = "server.ratings"
    label = "ratings"
    verbose_name = "Ratings"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from server.accounts.signals import standing_changed
        from server.games.models import RatingGame
        from server.games.signals import game_stored, games_counting_changed
        from server.networks.models import Network
        from server.networks.signals import network_stored
        from server.ratings import receivers
        from server.ratings.models import NetworkEvent
        from server.ratings.promotion import accept_when_ungated
        from server.runs.models import RunSettingsVersion

        post_save.connect(accept_when_ungated, sender=RunSettingsVersion, dispatch_uid="ratings-accept-ungated")
        network_stored.connect(receivers.accept_when_stored, sender=Network, dispatch_uid="ratings-network-stored")
        # An accepted or released network's KataGo file is made in the background (server.networks.katago).
        post_save.connect(receivers.queue_katago_file, sender=NetworkEvent, dispatch_uid="ratings-katago-file")
        game_stored.connect(receivers.count_rating_game, sender=RatingGame, dispatch_uid="ratings-game-stored")
        games_counting_changed.connect(
            receivers.recount_when_rating_games_change, sender=RatingGame, dispatch_uid="ratings-games-counting"
        )
        standing_changed.connect(receivers.recount_when_standing_changes, dispatch_uid="ratings-standing")
