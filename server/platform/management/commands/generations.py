"""``manage.py generations``: a run's accepted generations and its newest network (its final one,
which may still wait for its gating), as a JSON file beside copies of their network files, for
measurements made outside the run's database (the ablation's rating games).

    .venv/bin/python manage.py generations --out generations
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Sum

from common.files import atomic_write
from server.platform.demo import DEMO_RUN
from server.platform.experiment import generations
from server.ratings.matches import copy_network_file


class Command(BaseCommand):
    help = (
        "Write a run's accepted generations (when each was accepted, the samples and rows it had seen, the "
        "self-play games and rows stored by then) and its newest network, gated or not, to OUT/generations.json, "
        "and copy their network files to OUT."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", type=Path, required=True, help="folder for generations.json and the files")
        parser.add_argument("--run", default=DEMO_RUN, help=f"the run (default {DEMO_RUN}, the platform's)")

    def handle(self, *args, **options):
        from server.games.models import RatingGame, TrainingGame
        from server.networks.models import Network
        from server.ratings.models import NetworkEvent
        from server.runs.models import Run
        from server.training.models import TrainingLine

        run = Run.objects.filter(name=options["run"]).first()
        if run is None:
            raise CommandError(f"--run {options['run']}: no such run")
        out: Path = options["out"]
        out.mkdir(parents=True, exist_ok=True)
        games = TrainingGame.objects.filter(run=run)

        def stored_by(when) -> dict:
            before = games.filter(created_at__lte=when)
            return {"selfplay_games": before.count(), "rows": before.aggregate(rows=Sum("rows"))["rows"] or 0}

        listed = []
        for g in generations(run):
            network = run.networks.get(name=g.name)
            entry = dict(g.__dict__, random=network.is_random, file=None, accepted_at=None, selfplay_games=0, rows=0)
            if not network.is_random:
                accepted = network.events.filter(kind=NetworkEvent.Kind.ACCEPTED).latest("created_at").created_at
                entry.update(stored_by(accepted), file=copy_network_file(network, out).name)
                entry["accepted_at"] = accepted.timestamp()
            listed.append(entry)
        final = None
        newest = run.networks.filter(is_random=False).order_by("-created_at", "-id").first()
        if newest is not None:
            final = {
                "name": newest.name,
                "file": copy_network_file(newest, out).name,
                "created_at": newest.created_at.timestamp(),
                # accepted, rejected, or waiting for its gating's verdict when the run stopped
                "gating": newest.state
                if newest.state in (Network.State.ACCEPTED, Network.State.REJECTED)
                else "waiting",
                "train_step": newest.train_step,
                "rows_seen": newest.rows_seen,
                **stored_by(newest.created_at),
            }
        lines = TrainingLine.objects.filter(run=run)
        document = {
            "run": run.name,
            "started": run.created_at.isoformat(),
            "selfplay_games": games.count(),
            "rows": games.aggregate(rows=Sum("rows"))["rows"] or 0,
            "rating_games": RatingGame.objects.filter(run=run).count(),
            "candidates": run.networks.filter(is_random=False).count(),
            "training_samples": max((line.samples for line in lines), default=0),
            "generations": listed,
            "final": final,
        }
        atomic_write(out / "generations.json", json.dumps(document, indent=1).encode())
        self.stdout.write(f"{len(listed) - 1} accepted generations of run {run.name} written to {out}")
