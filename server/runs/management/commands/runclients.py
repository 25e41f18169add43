"""``manage.py runclients RUN``: the client versions and builds a run takes, shown or changed."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from server.runs.models import Run, forget_state


class Command(BaseCommand):
    help = (
        "Show or change the client versions and builds a run takes; task requests and games of other "
        "clients are refused (HTTP 426, the client says to upgrade)."
    )

    def add_arguments(self, parser):
        parser.add_argument("run")
        parser.add_argument("--min-version", help="the oldest client version the run takes")
        parser.add_argument("--max-version", help="the newest client version the run takes")
        parser.add_argument("--no-max-version", action="store_true", help="take every version from the oldest on")
        parser.add_argument(
            "--build",
            action="append",
            default=[],
            metavar="BUILD",
            help="take only these builds (repeat for several; replaces the list)",
        )
        parser.add_argument("--add-build", action="append", default=[], metavar="BUILD", help="take this build too")
        parser.add_argument(
            "--remove-build", action="append", default=[], metavar="BUILD", help="take this build no more"
        )
        parser.add_argument("--any-build", action="store_true", help="take every build (empty the list)")

    def handle(
        self,
        run,
        min_version=None,
        max_version=None,
        no_max_version=False,
        build=(),
        add_build=(),
        remove_build=(),
        any_build=False,
        **options,
    ):
        if max_version is not None and no_max_version:
            raise CommandError("--max-version and --no-max-version: give one of them")
        if any_build and (build or add_build):
            raise CommandError("--any-build empties the list of builds: it goes with neither --build nor --add-build")
        with transaction.atomic():
            try:
                obj = Run.objects.select_for_update().get(name=run)
            except Run.DoesNotExist:
                raise CommandError(f"there is no run {run!r}") from None
            builds = set(build) if build else set(obj.client_builds or [])
            missing = sorted(set(remove_build) - builds)
            if missing:
                raise CommandError(f"--remove-build {', '.join(missing)}: not among the run's builds")
            builds = set() if any_build else (builds | set(add_build)) - set(remove_build)
            changed: dict[str, object] = {"client_builds": sorted(builds)}
            if min_version is not None:
                changed["min_client_version"] = min_version
            if max_version is not None or no_max_version:
                changed["max_client_version"] = "" if no_max_version else max_version
            for field, value in changed.items():
                setattr(obj, field, value)
            try:
                obj.full_clean()
            except ValidationError as e:
                raise CommandError(
                    "; ".join(f"{field}: {' '.join(messages)}" for field, messages in e.message_dict.items())
                ) from None
            obj.save(update_fields=list(changed))
            transaction.on_commit(forget_state)
        taken = obj.clients_taken()
        self.stdout.write(
            f"run {obj.name} takes client versions {taken['min_client_version']} to "
            f"{taken['max_client_version'] or 'any newer'}, "
            + (f"builds {', '.join(taken['client_builds'])}" if taken["client_builds"] else "any build")
        )
