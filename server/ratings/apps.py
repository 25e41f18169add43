from django.apps import AppConfig


class RatingsConfig(AppConfig):
    name = "server.ratings"
    label = "ratings"
    verbose_name = "Ratings"
