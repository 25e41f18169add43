"""The statistical audit of contributors (docs/data-integrity.md, "Statistical audit").

For each network of a run that has recent self-play games, each contributor's newest games are
sampled (a bounded number of rows, spread over the games), the rows evaluated by that network on the
CPU (``server.audit.evaluate``), and the contributor's means compared with absolute thresholds and
with the other contributors of the same network (median and MAD). The result is an ``AuditScore``
per contributor; a flagged one carries the evidence a maintainer needs to decide on a quarantine.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from common.go.geometry import PASS
from common.go.sgf import SGFError, parse_collection, record_from_tree
from server.accounts.signals import standing_changed
from server.audit.models import AuditScore, Quarantine
from server.audit.rating import MIN_GAMES as MIN_RATING_GAMES
from server.audit.rating import judge_rating, rating_figures
from server.files import read_file, stored_name
from server.games.models import TrainingGame
from server.games.rows import game_rows
from server.ratings.promotion import gating_settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Threshold:
    """How a statistic is judged. ``direction`` +1: larger is worse, -1: smaller is worse.
    ``absolute``: the value beyond which a contributor is flagged whatever the others do (None:
    only relative). ``min_effect``: how far from the others' median a contributor must be before the
    relative test may flag it (with 3 contributors the MAD can be tiny)."""

    direction: int
    absolute: float | None
    min_effect: float
    label: str


# Measured in tests/bench/bench_audit.py; the figures and the reasons are in docs/data-integrity.md.
THRESHOLDS: dict[str, Threshold] = {
    "raw_error": Threshold(+1, 0.25, 0.10, "recorded raw value against the network's"),
    "top_missed": Threshold(+1, 0.85, 0.25, "share of rows whose target misses the network's favourite move"),
    "top_agree": Threshold(-1, None, 0.10, "share of rows whose target's top move is the network's"),
    "policy_gain": Threshold(-1, -2.0, 0.75, "policy target's log-likelihood under the network over uniform"),
    "value_error": Threshold(+1, None, 0.20, "search value against the network's value"),
}
RELATIVE_Z = 5.0  # robust z (deviation / (1.4826 MAD)) beyond which a contributor differs from the others
MIN_POPULATION = 3  # contributors of one network needed for the relative test
MIN_GAMES_FOR_GAME_STATISTICS = 20  # game length, pass and resignation rates are compared from this many games
GAME_STATISTICS: dict[str, float] = {"moves": 0.5, "pass_rate": 0.05, "resign_rate": 0.3}  # min effect (moves: share)
EXAMPLES = 5


class AuditError(Exception):
    """A network that cannot be evaluated (no file, unreadable): its contributors are not judged."""


def audit_settings() -> dict:
    return settings.SENTE_AUDIT


def load_network(network):
    """The network's model on the CPU, in eval mode; AuditError says why it cannot be."""
    from common.nn.modelfile import decode_model, model_of

    if network.is_random or not network.file:
        raise AuditError(f"network {network.name} has no file to evaluate rows with")
    try:
        mf = decode_model(read_file(network.file.name), network.file.name)
    except FileNotFoundError:
        raise AuditError(f"network {network.name}: its file {network.file.name} is missing from storage") from None
    except ValueError as e:
        raise AuditError(f"network {network.name}: its file cannot be read: {e}") from None
    return model_of(mf, "cpu")


def _passes(sgf: bytes) -> int:
    try:
        record = record_from_tree(parse_collection(sgf)[0])
    except (SGFError, IndexError):
        return 0
    return sum(1 for _, loc in record.moves if loc == PASS)


def _sample(games: list[TrainingGame], rows: int, rng: np.random.Generator) -> list[tuple[TrainingGame, np.ndarray]]:
    """About ``rows`` row indices spread evenly over ``games`` (newest first)."""
    per_game = max(1, math.ceil(rows / max(1, len(games))))
    picked, total = [], 0
    for game in games:
        if total >= rows or game.rows == 0:
            continue
        k = min(per_game, game.rows, rows - total)
        picked.append((game, np.sort(rng.choice(game.rows, k, replace=False))))
        total += k
    return picked


def contributor_figures(model, user_id: int, run, network, since, options: dict, rng: np.random.Generator) -> dict:
    """Evaluate a sample of the contributor's recent rows; the means, counts and worst rows."""
    from server.audit.evaluate import ROW_STATISTICS, RowFigures, evaluate_rows

    recent = TrainingGame.objects.filter(
        run=run, network=network, user_id=user_id, created_at__gte=since, disabled=False
    )
    games = list(recent.select_related("shard").order_by("-created_at", "-id")[: options["games"]])
    figures: list[RowFigures] = []
    where: list[tuple[str, int]] = []
    passes = moves = 0
    for game, indices in _sample(games, options["rows"], rng):
        try:
            part = evaluate_rows(model, game_rows(game), indices, stored_name(game.npz))
        except (FileNotFoundError, ValueError) as e:
            log.warning("audit: rows of game %s skipped: %s", game.client_game_id, e)
            continue
        figures.append(part)
        where.extend((game.client_game_id, int(i)) for i in indices)
        try:
            passes += _passes(read_file(stored_name(game.sgf)))
            moves += game.moves
        except FileNotFoundError:
            pass
    rows = RowFigures.concat(figures)
    stats = {s: _mean(getattr(rows, s)) for s in ROW_STATISTICS}
    counts = recent.aggregate(n=Count("id"), resigned=Count("id", filter=Q(resigned=True)))
    all_moves = list(recent.values_list("moves", flat=True)[:1000])
    stats["moves"] = float(np.mean(all_moves)) if all_moves else None
    stats["resign_rate"] = counts["resigned"] / counts["n"] if counts["n"] else None
    stats["pass_rate"] = passes / moves if moves else None
    order: Sequence[int] | np.ndarray = (
        np.argsort(np.nan_to_num(rows.policy_gain, nan=np.inf))[:EXAMPLES] if len(rows) else []
    )
    examples = [
        {
            "game": where[i][0],
            "row": where[i][1],
            "policy_gain": _round(rows.policy_gain[i]),
            "top_missed": _round(rows.top_missed[i]),
            "raw_error": _round(rows.raw_error[i]),
        }
        for i in order
    ]
    return {"stats": stats, "rows": len(rows), "games": len(games), "all_games": counts["n"], "examples": examples}


def _mean(a: np.ndarray) -> float | None:
    a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else None


def _round(x) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 4)


def judge(figures: dict[int, dict], min_rows: int) -> dict[int, tuple[str, list[dict], dict]]:
    """Each contributor's verdict, evidence and the population it was compared with."""
    judged = {u: f for u, f in figures.items() if f["rows"] >= min_rows}
    population: dict[str, dict] = {}
    for name in [*THRESHOLDS, *GAME_STATISTICS]:
        values = [
            f["stats"][name]
            for f in judged.values()
            if f["stats"].get(name) is not None
            and (name in THRESHOLDS or f["all_games"] >= MIN_GAMES_FOR_GAME_STATISTICS)
        ]
        if values:
            median = float(np.median(values))
            population[name] = {
                "median": median,
                "mad": float(np.median(np.abs(np.array(values) - median))),
                "n": len(values),
            }
    out: dict[int, tuple[str, list[dict], dict]] = {}
    for user, f in figures.items():
        if f["rows"] < min_rows:
            out[user] = (AuditScore.Verdict.TOO_FEW, [], population)
            continue
        evidence = []
        for name, t in THRESHOLDS.items():
            value = f["stats"].get(name)
            if value is None:
                continue
            if t.absolute is not None and (value - t.absolute) * t.direction > 0:
                evidence.append(
                    {
                        "statistic": name,
                        "meaning": t.label,
                        "value": _round(value),
                        "threshold": t.absolute,
                        "kind": "absolute",
                        "rows": f["rows"],
                    }
                )
                continue
            item = _relative(name, value, t.direction, t.min_effect, population.get(name), f["rows"])
            if item:
                evidence.append(dict(item, meaning=t.label))
        if f["all_games"] >= MIN_GAMES_FOR_GAME_STATISTICS:
            for name, effect in GAME_STATISTICS.items():
                value, pop = f["stats"].get(name), population.get(name)
                if value is None or pop is None:
                    continue
                floor = effect * pop["median"] if name == "moves" else effect
                for direction in (+1, -1):
                    item = _relative(name, value, direction, floor, pop, f["rows"])
                    if item:
                        evidence.append(
                            dict(
                                item,
                                games=f["all_games"],
                                meaning=f"{name} of the contributor's {f['all_games']} games against the others'",
                            )
                        )
        out[user] = (AuditScore.Verdict.FLAGGED if evidence else AuditScore.Verdict.OK, evidence, population)
    return out


def _relative(name: str, value: float, direction: int, min_effect: float, pop: dict | None, sample: int) -> dict | None:
    if pop is None or pop["n"] < MIN_POPULATION:
        return None
    scale = 1.4826 * pop["mad"]
    limit = pop["median"] + direction * max(RELATIVE_Z * scale, min_effect)
    if (value - limit) * direction <= 0:
        return None
    z = (value - pop["median"]) / scale if scale > 0 else None
    return {
        "statistic": name,
        "value": _round(value),
        "threshold": _round(limit),
        "kind": "relative",
        "median": _round(pop["median"]),
        "mad": _round(pop["mad"]),
        "z": _round(z),
        "contributors": pop["n"],
        "rows": sample,
    }


def audit_run(run, now=None, seed: int | None = None) -> list[AuditScore]:
    """Audit every contributor of every network of the run with games in the recent period, and
    every account's rating games of the period."""
    options = audit_settings()
    now = now or timezone.now()
    since = now - timedelta(days=options["days"])
    return _audit_rows(run, now, since, options, seed) + audit_rating_games(run, now, since)


def audit_rating_games(run, now, since) -> list[AuditScore]:
    """One score per account with rating games of the run since ``since``: its results on each pair
    of networks against the other accounts' (``server.audit.rating``)."""
    from server.networks.models import Network

    figures = rating_figures(run, since, gating_settings(run).account_share)
    ids = {i for f in figures.values() for p in f["pairs"] for i in p["pair"]}
    names = dict(Network.objects.filter(pk__in=ids).values_list("pk", "name"))
    scores = []
    with transaction.atomic():
        for user_id in sorted(figures):
            f = figures[user_id]
            verdict, evidence = judge_rating(f)
            for item in evidence:
                if "pair" in item:
                    item["pair"] = [names.get(i, str(i)) for i in item["pair"]]
            pairs = [dict(p, pair=[names.get(i, str(i)) for i in p["pair"]]) for p in f["pairs"]]
            scores.append(
                AuditScore.objects.create(
                    user_id=user_id,
                    run=run,
                    kind=AuditScore.Kind.RATING,
                    created_at=now,
                    games=f["games"],
                    statistics={"rating_z": f["z"], "pairs": len(pairs)},
                    verdict=verdict,
                    evidence=evidence,
                    examples=sorted(pairs, key=lambda p: -abs(p["z"]))[:EXAMPLES],
                    message=""
                    if verdict != AuditScore.Verdict.TOO_FEW
                    else f"{f['games']} rating games, {len(pairs)} pair(s) shared with others; "
                    f"{MIN_RATING_GAMES} games on shared pairs are needed to judge",
                )
            )
    for s in scores:
        if s.verdict == AuditScore.Verdict.FLAGGED:
            log.warning(
                "audit: %s flagged on its rating games: %s",
                s.user,
                ", ".join(f"{e['statistic']} {e['value']}" for e in s.evidence),
            )
    return scores


def _audit_rows(run, now, since, options: dict, seed: int | None) -> list[AuditScore]:
    """Every contributor's self-play rows of every network of the run with games since ``since``."""
    rng = np.random.default_rng(seed)
    recent = (
        TrainingGame.objects.filter(run=run, created_at__gte=since, disabled=False, network__is_random=False)
        .values_list("network_id", "user_id")
        .distinct()
        .order_by("network_id", "user_id")
    )
    by_network: dict[int, list[int]] = {}
    for network_id, user_id in recent:
        by_network.setdefault(network_id, []).append(user_id)
    from server.networks.models import Network

    scores: list[AuditScore] = []
    for network in Network.objects.filter(pk__in=by_network).order_by("pk"):
        users = by_network[network.pk]
        try:
            model = load_network(network)
        except AuditError as e:
            log.error("audit of run %s: %s", run.name, e)
            scores.extend(
                AuditScore.objects.create(
                    user_id=u,
                    run=run,
                    network=network,
                    created_at=now,
                    verdict=AuditScore.Verdict.ERROR,
                    message=str(e)[:300],
                )
                for u in users
            )
            continue
        figures = {u: contributor_figures(model, u, run, network, since, options, rng) for u in users}
        verdicts = judge(figures, options["min_rows"])
        with transaction.atomic():
            for u in users:
                verdict, evidence, population = verdicts[u]
                f = figures[u]
                scores.append(
                    AuditScore.objects.create(
                        user_id=u,
                        run=run,
                        network=network,
                        created_at=now,
                        games=f["games"],
                        rows=f["rows"],
                        statistics={k: _round(v) for k, v in f["stats"].items()},
                        population=population,
                        verdict=verdict,
                        evidence=evidence,
                        examples=f["examples"],
                        message=""
                        if verdict != AuditScore.Verdict.TOO_FEW
                        else f"{f['rows']} rows sampled; {options['min_rows']} are needed to judge",
                    )
                )
        flagged = [s for s in scores if s.network_id == network.pk and s.verdict == AuditScore.Verdict.FLAGGED]
        for s in flagged:
            log.warning(
                "audit: %s flagged on network %s: %s",
                s.user,
                network.name,
                ", ".join(e["statistic"] for e in s.evidence),
            )
    return scores


# --- quarantine ------------------------------------------------------------------------------------
def quarantine(user, by, reason: str, score: AuditScore | None = None) -> Quarantine:
    """Put the account in quarantine (its games leave the training window); the one in force if
    there is one already."""
    with transaction.atomic():
        existing = Quarantine.objects.select_for_update().filter(user=user, lifted_at__isnull=True).first()
        if existing is not None:
            return existing
        q = Quarantine.objects.create(user=user, created_by=by, reason=reason, score=score)
        standing_changed.send(sender=type(user), user=user)
    log.warning("account %s quarantined by %s: %s", user, by, reason)
    return q


def lift(user, by) -> bool:
    """End the account's quarantine (its games count again); False if it had none in force."""
    with transaction.atomic():
        done = Quarantine.objects.filter(user=user, lifted_at__isnull=True).update(
            lifted_at=timezone.now(), lifted_by=by
        )
        if done:
            standing_changed.send(sender=type(user), user=user)
    if done:
        log.warning("quarantine of account %s lifted by %s", user, by)
    return bool(done)
