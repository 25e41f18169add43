"""``manage.py audit``: audit a run's contributors now and print each one's verdict."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from server.audit.services import audit_run
from server.runs.models import Run


class Command(BaseCommand):
    help = (
        "Audit the contributors of a run (default: the current run): evaluate a sample of each one's recent "
        "self-play rows with the network that played them and flag those the network does not explain, and "
        "compare each one's rating games with the other accounts' on the same pairs."
    )

    def add_arguments(self, parser):
        parser.add_argument("--run", help="the run's name (default: the current run)")
        parser.add_argument("--seed", type=int, help="seed of the row sample (default: a fresh one)")

    def handle(self, *args, **options):
        name = options["run"]
        run = Run.objects.filter(name=name).first() if name else Run.objects.current()
        if run is None:
            raise CommandError(f"there is no run {name!r}" if name else "no run is active")
        scores = audit_run(run, seed=options["seed"])
        if not scores:
            self.stdout.write(f"run {run.name}: no self-play or rating games to audit in the audit's period")
        for s in scores:
            detail = (
                "; ".join(f"{e['statistic']} {e['value']} beyond {e['threshold']} ({e['kind']})" for e in s.evidence)
                or s.message
            )
            self.stdout.write(
                f"{s.user.username} on {s.subject}: {s.verdict}, "
                + (f"{s.rows} rows of {s.games} games" if s.kind == s.Kind.ROWS else f"{s.games} games")
                + (f": {detail}" if detail else "")
            )
        flagged = sum(s.verdict == s.Verdict.FLAGGED for s in scores)
        self.stdout.write(f"run {run.name}: {len(scores)} contributor(s) audited, {flagged} flagged")
