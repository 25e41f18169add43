import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.settings import SettingsError
from server.runs.models import Run, create_run


class Command(BaseCommand):
    help = "Create a run with its first settings version and its random network."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--settings-file", type=Path, help="a JSON file of settings (default: the paper's)")
        parser.add_argument("--description", default="")
        parser.add_argument("--min-client-version", help="the oldest client version the run takes")
        parser.add_argument(
            "--max-client-version", default="", help="the newest client version the run takes (default: no newest)"
        )
        parser.add_argument(
            "--client-build",
            action="append",
            default=[],
            metavar="BUILD",
            help="a client build the run takes (repeat for several; default: any build)",
        )

    def handle(
        self,
        name,
        settings_file=None,
        description="",
        min_client_version=None,
        max_client_version="",
        client_build=(),
        **options,
    ):
        settings = settings_file
        if Run.objects.filter(name=name).exists():
            raise CommandError(f"run {name!r} exists already")
        document = {}
        if settings is not None:
            try:
                document = json.loads(settings.read_text())
            except (OSError, json.JSONDecodeError) as e:
                raise CommandError(f"settings file {settings}: {e}") from None
        try:
            run = create_run(
                name,
                document,
                description,
                min_client_version=min_client_version,
                max_client_version=max_client_version,
                client_builds=sorted(set(client_build)),
            )
        except SettingsError as e:
            raise CommandError(f"settings file {settings}: {e}") from None
        except Exception as e:  # model validation
            raise CommandError(f"run {name!r}: {e}") from None
        self.stdout.write(f"run {run.name} created (settings v1, network {run.selfplay_network().name})")
