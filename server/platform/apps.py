from django.apps import AppConfig


class PlatformConfig(AppConfig):
    name = "server.platform"
    label = "platform"
    verbose_name = "The platform on one machine"
