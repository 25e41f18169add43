from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "server.audit"
    label = "audit"
    verbose_name = "Audit of contributors"

    def ready(self) -> None:
        from server.audit import tasks
        from server.games.signals import game_stored

        game_stored.connect(tasks.audit_when_game_stored, dispatch_uid="audit-game-stored")
