from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "server.runs"
    label = "runs"
    verbose_name = "Runs"
