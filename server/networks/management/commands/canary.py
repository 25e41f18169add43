"""``manage.py canary [--network NAME] [--all]``: compute the networks' canary references (their fp32
CPU outputs on the canary positions) that are missing or of an older canary, here and now."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from server.networks.canary import compute_canary, is_current
from server.networks.models import Network


class Command(BaseCommand):
    help = "Compute the canary references of networks that have none (or one of an older canary)."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--network",
            action="append",
            default=[],
            help="only this network (repeatable); computed again even if it has a current one",
        )
        parser.add_argument("--all", action="store_true", help="compute every network's again")

    def handle(self, *args, **options) -> None:
        names = options["network"]
        if names:
            networks = list(Network.objects.filter(name__in=names))
            missing = sorted(set(names) - {n.name for n in networks})
            if missing:
                raise CommandError(f"there is no network {', '.join(repr(m) for m in missing)}")
            random = [n.name for n in networks if n.is_random]
            if random:
                raise CommandError(f"network {', '.join(random)} is a random network: it has no canary")
        else:
            networks = [
                n
                for n in Network.objects.filter(is_random=False).order_by("created_at", "id")
                if options["all"] or not is_current(n)
            ]
        for network in networks:
            try:
                ref = compute_canary(network)
            except (OSError, ValueError) as e:
                self.stderr.write(f"{network.name}: {e}")
                continue
            self.stdout.write(f"{network.name}: canary computed in {ref.seconds:.2f} s")
        if not networks:
            self.stdout.write("every network has a current canary")
