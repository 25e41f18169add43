from django.apps import AppConfig


class DistributionConfig(AppConfig):
    name = "server.distribution"
    label = "distribution"
    verbose_name = "Distribution"
