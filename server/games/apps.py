from django.apps import AppConfig


class GamesConfig(AppConfig):
    name = "server.games"
    label = "games"
    verbose_name = "Games"
