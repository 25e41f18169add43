from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "server.accounts"
    label = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from server.accounts import schema  # noqa: F401 (registers the schema's authentication scheme)
