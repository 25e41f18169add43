from django.apps import AppConfig


class NetworksConfig(AppConfig):
    name = "server.networks"
    label = "networks"
    verbose_name = "Networks"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from server.networks.tasks import network_event_saved
        from server.ratings.models import NetworkEvent

        # An accepted or released network's KataGo file is made in the background (server.networks.katago).
        post_save.connect(network_event_saved, sender=NetworkEvent, dispatch_uid="networks-katago-file")
