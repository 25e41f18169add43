"""What the releases page says of each released network in words: its strength against the run's
previous release and against the run's anchors (GNU Go at fixed levels, ``server.ratings.anchors``),
and the games it was trained on (the run's self-play settings when it was made)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from common.elo import Z95, expected_score
from common.settings import SelfPlaySettings
from server.networks.models import Network
from server.ratings.models import AnchorRating
from server.runs.models import RunSettingsVersion


@dataclass(frozen=True)
class ReleaseFacts:
    previous: Network | None  # the run's release before it (None: its first)
    strength: str  # in words
    trained_on: str  # in words
    anchors: tuple[str, ...] = ()  # its distance to each rated anchor, in words


def strength_words(network: Network, previous: Network | None) -> str:
    rating = getattr(network, "rating", None)
    if rating is None or rating.elo is None or rating.elo_se is None:
        return "Not rated yet."
    if previous is None:
        return "The run's first release."
    before = getattr(previous, "rating", None)
    if before is None or before.elo is None or before.elo_se is None:
        return f"The previous release, {previous.name}, is not rated."
    difference = rating.elo - before.elo
    margin = Z95 * math.hypot(rating.elo_se, before.elo_se)
    share = expected_score(difference)
    words = f"{difference:+.0f} ± {margin:.0f} Elo against {previous.name}, the previous release: "
    if abs(difference) <= margin:
        return words + "not clearly stronger or weaker."
    if difference > 0:
        return words + f"it would win about {100 * share:.0f}% of its games against it."
    return words + f"weaker; it would win about {100 * share:.0f}% of its games against it."


def anchor_words(network: Network, anchors: list[AnchorRating]) -> tuple[str, ...]:
    """The network's Elo against each rated anchor of its run, e.g. "+240 ± 60 Elo above GNU Go level
    10" (the interval from both errors, as if they were independent)."""
    rating = getattr(network, "rating", None)
    if rating is None or rating.elo is None or rating.elo_se is None:
        return ()
    words = []
    for a in anchors:
        if a.elo is None or a.elo_se is None:
            continue
        difference = rating.elo - a.elo
        margin = Z95 * math.hypot(rating.elo_se, a.elo_se)
        side = "above" if difference >= 0 else "below"
        words.append(f"{abs(difference):.0f} ± {margin:.0f} Elo {side} {a.anchor.name}")
    return tuple(words)


def _sizes(settings: SelfPlaySettings) -> str:
    weights = dict(zip(settings.board_sizes, settings.board_size_weights))
    sizes = sorted(s for s in settings.sizes_in_play())
    names = [f"{s}x{s}" for s in sizes]
    if len(sizes) == 1:
        return f"{names[0]} boards"
    if sizes == list(range(sizes[0], sizes[-1] + 1)):
        text = f"{names[0]} to {names[-1]} boards"
    else:
        text = ", ".join(names[:-1]) + f" and {names[-1]} boards"
    most = max(sizes, key=lambda s: weights[s])
    if sorted(weights[s] for s in sizes)[-2] < weights[most]:
        text += f" (most on {most}x{most})"
    return text


def _choices(values: tuple[str, ...]) -> str:
    names = list(dict.fromkeys(v.lower() for v in values))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" or {names[-1]}"


def trained_on_words(settings: SelfPlaySettings) -> str:
    rules = settings.rules
    return (
        f"Trained on self-play on {_sizes(settings)}, {_choices(rules.scoring)} scoring, {_choices(rules.ko)} ko, "
        f"komi about {settings.komi_mean:g}."
    )


def release_facts(networks: list[Network]) -> dict[int, ReleaseFacts]:
    """The facts of each network, by its id: three queries, however many networks."""
    if not networks:
        return {}
    runs = {n.run_id for n in networks}
    releases: dict[int, list[Network]] = {}
    for n in (
        Network.objects.filter(run_id__in=runs, released=True)
        .select_related("rating")
        .only("id", "name", "run_id", "created_at", "rating__elo", "rating__elo_se")
        .order_by("created_at", "id")
    ):
        releases.setdefault(n.run_id, []).append(n)
    anchors: dict[int, list[AnchorRating]] = {}
    for a in AnchorRating.objects.filter(run_id__in=runs).select_related("anchor").order_by("anchor__level"):
        anchors.setdefault(a.run_id, []).append(a)
    versions: dict[int, list[RunSettingsVersion]] = {}
    for v in RunSettingsVersion.objects.filter(run_id__in=runs).order_by("version"):
        versions.setdefault(v.run_id, []).append(v)
    facts = {}
    for n in networks:
        earlier = [r for r in releases.get(n.run_id, []) if (r.created_at, r.pk) < (n.created_at, n.pk)]
        previous = earlier[-1] if earlier else None
        run_versions = versions.get(n.run_id, [])
        made_under = [v for v in run_versions if v.created_at <= n.created_at] or run_versions[:1]
        trained_on = trained_on_words(made_under[-1].settings.selfplay) if made_under else ""
        facts[n.pk] = ReleaseFacts(
            previous, strength_words(n, previous), trained_on, anchor_words(n, anchors.get(n.run_id, []))
        )
    return facts
