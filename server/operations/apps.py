from django.apps import AppConfig


class OperationsConfig(AppConfig):
    name = "server.operations"
    label = "operations"
    verbose_name = "Operations"
