"""The ablation's report: a table of each arm's strength against the anchors (each repetition's,
and with several the arm's pooled over them), what the paper claims beside what we found, and a plot
of Elo against compute per repetition (matplotlib), as Markdown, JSON and PNG (``ablation-DATE.md``,
``.json`` and ``.png``). With one repetition per arm it reads as an ablation without repetitions."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from common.files import atomic_write
from server.platform.ablation_rating import NARROWING_ROUNDS


@dataclass
class Point:
    """A rated generation of a repetition, placed on the compute axis."""

    network: str
    cpu_minutes: float
    selfplay_games: int
    rows: int
    train_step: int
    gating: str  # its gating's outcome: accepted, rejected, or waiting (the final network may be either)
    elo: float
    ci95: float
    games: int

    def label(self) -> str:
        return self.network + {"accepted": "", "rejected": " (rejected)"}.get(self.gating, " (not gated)")


@dataclass
class RepetitionReport:
    """One repetition of an arm: what its platform did, and its rated generations."""

    seed: int
    name: str  # its folder under the ablation's arms/, and its networks' prefix in the rating
    cpu_minutes: float
    wall_minutes: float
    mean_load: float | None
    sittings: int
    selfplay_games: int
    rows: int
    rating_games: int
    candidates: int
    accepted: int
    training_samples: int
    points: list[Point] = field(default_factory=list)
    vs_reference: float | None = None  # its final network's Elo minus the reference's
    vs_reference_ci95: float | None = None
    selfplay_minutes: float = 0.0  # the CPU time of its client's processes alone

    @property
    def final(self) -> Point | None:
        return self.points[-1] if self.points else None


@dataclass
class ArmReport:
    name: str
    title: str
    description: str
    claim: str
    expect: str
    architecture: str
    evals_per_s: float | None
    repetitions: list[RepetitionReport] = field(default_factory=list)
    # Pooled over the repetitions that exported a network: their final networks' mean Elo, and that
    # mean minus the full arm's (with one repetition each, the final network's against the reference).
    mean_elo: float | None = None
    mean_elo_ci95: float | None = None
    vs_reference: float | None = None
    vs_reference_ci95: float | None = None
    verdict: str = ""

    @property
    def finals(self) -> list[Point]:
        return [r.final for r in self.repetitions if r.final is not None]


@dataclass
class Anchor:
    key: str
    label: str
    elo: float
    ci95: float
    games: int


@dataclass
class AblationReport:
    date: str
    board: int
    cpu_minutes: float  # each repetition's budget
    seeds: int  # repetitions per arm
    machine: str
    command: str
    visits: int
    reference: str | None  # the reference network's player key
    anchors: list[Anchor]
    arms: list[ArmReport]
    pairings: int
    games: int
    fit_iterations: int
    budget: str = "platform"  # what cpu_minutes counts: the platform's processes, or its client's (selfplay)
    interval: float = 0.0  # the half-width asked of each arm against the full arm (0: none asked)
    narrowing_games: int = 0  # the games of the further rounds played for it

    @property
    def selfplay(self) -> bool:
        return self.budget == "selfplay"

    def to_dict(self) -> dict:
        return asdict(self)

    def _narrowing(self) -> str:
        """What the further rounds asked by ``interval`` played."""
        if not self.interval:
            return ""
        if not self.narrowing_games:
            return (
                f" Every arm's interval against the full arm was within ± {self.interval:g} after these games, so "
                "no further rounds were played."
            )
        return (
            f" {self.narrowing_games:,} of the games were further rounds, each from openings of its own, between "
            f"the final networks of every arm whose interval against the full arm was wider than ± {self.interval:g} "
            f"and the full arm's, until every arm's was within it or {NARROWING_ROUNDS} rounds had been played: "
            "they stopped on the intervals' widths, never on the differences themselves."
        )

    def markdown(self, plot_file: str) -> str:
        b = self.board
        levels = [a.label.removeprefix("GNU Go ") for a in self.anchors if a.key.startswith("gnugo")]
        gnugo = f"GNU Go at {', '.join(levels)}" if levels else "no GNU Go (not installed)"
        several = self.seeds > 1
        platform = "Each arm ran the whole platform (self-play client, trainer, gating) "
        counted = (
            "CPU-minutes of its self-play client (the trainer kept up with the rows, its CPU not counted)"
            if self.selfplay
            else "CPU-minutes of its processes"
        )
        if several:
            ran = (
                f"{platform}{self.seeds} times, each repetition from the random network for {self.cpu_minutes:g} "
                f"{counted} on {self.machine}, in its own data folder (the platform takes no "
                "seed: a repetition is an independent run). Their generations then played the anchors (the "
                f"uniform random player, {gnugo}) and the reference, the final network of the full arm's first "
                "repetition"
            )
        else:
            ran = (
                f"{platform}from the random network for {self.cpu_minutes:g} {counted} on "
                f"{self.machine}, in its own data folder. Its generations then played the anchors (the uniform "
                f"random player, {gnugo}) and the full arm's final network"
            )
        seed = ["seed"] if several else []
        lines = [
            f"# Ablation on {b}x{b}, {self.date}",
            "",
            f"{ran}: {self.games:,} games in {self.pairings} pairings at {self.visits} visits per move, rated in "
            f"one Bradley-Terry fit with the uniform random player at 0 ({self.fit_iterations} Newton steps)."
            + self._narrowing(),
            "",
            "Reproduce:",
            "",
            "```sh",
            self.command,
            "```",
            "",
            "## The arms",
            "",
            _row(
                "arm",
                *seed,
                "final network",
                "Elo ± 95%",
                "against the full arm ± 95%",
                "CPU-min",
                *(["self-play CPU-min"] if self.selfplay else []),
                "minutes (load)",
                "self-play games",
                "rows",
                "training samples",
                "accepted / exported",
                "network, evaluations/s",
            ),
            "|---" * (11 + len(seed) + self.selfplay) + "|",
        ]
        for arm in self.arms:
            speed = f"{arm.architecture}, {arm.evals_per_s:,.0f}" if arm.evals_per_s else arm.architecture
            for r in arm.repetitions:
                final = r.final
                load = f" ({r.mean_load:.1f})" if r.mean_load is not None else ""
                lines.append(
                    _row(
                        arm.title,
                        *([str(r.seed)] if several else []),
                        final.label() if final else "(none exported)",
                        f"{final.elo:+.0f} ± {final.ci95:.0f}" if final else "-",
                        _against(r.vs_reference, r.vs_reference_ci95, "0 (the reference)"),
                        f"{r.cpu_minutes:.1f}",
                        *([f"{r.selfplay_minutes:.1f}"] if self.selfplay else []),
                        f"{r.wall_minutes:.1f}{load}",
                        f"{r.selfplay_games:,}",
                        f"{r.rows:,}",
                        f"{r.training_samples:,}",
                        f"{r.accepted} / {r.candidates}",
                        speed,
                    )
                )
        lines += [
            "",
            "CPU-min: the CPU time its platform's processes used (user and system, all sittings); "
            + ("self-play CPU-min: its client's alone, the budget; " if self.selfplay else "")
            + "minutes: the "
            "wall time, with the mean 1-minute load average of the machine while it ran. Evaluations/s: its "
            "network at the client's batch on this board, one thread, measured before the rating."
            + (" Against the full arm: the final network's Elo minus the reference's." if several else ""),
        ]
        if several:
            lines += [
                "",
                f"## The arms over their {self.seeds} repetitions",
                "",
                "| arm | final networks | mean Elo ± 95% | against the full arm ± 95% |",
                "|---|---|---|---|",
            ]
            for arm in self.arms:
                mean = f"{arm.mean_elo:+.0f} ± {arm.mean_elo_ci95:.0f}" if arm.mean_elo is not None else "-"
                lines.append(
                    _row(
                        arm.title,
                        f"{len(arm.finals)} of {len(arm.repetitions)}",
                        mean,
                        _against(arm.vs_reference, arm.vs_reference_ci95, "0 (the full arm)"),
                    )
                )
            lines += [
                "",
                "Mean Elo: of the final networks of the arm's repetitions (those that exported one); against the "
                "full arm: that mean minus the full arm's. Their 95% intervals come from the fit's covariance of "
                "those networks' ratings: they hold how well the games measured these networks, not how far "
                "another repetition would land (the rows above show how far these did). The verdicts below are on "
                "this difference.",
            ]
        lines += [
            "",
            "## Anchors",
            "",
            "| anchor | Elo ± 95% | games |",
            "|---|---|---|",
        ]
        lines += [
            f"| {a.label} | {a.elo:+.0f} ± {a.ci95:.0f} | {a.games:,} |"
            if a.games
            else f"| {a.label} | not rated | 0 |"
            for a in self.anchors
        ]
        lines += [
            "",
            "## Elo against compute",
            "",
            f"![Elo of each arm's generations against the CPU time it had used]({plot_file})",
            "",
            f"| arm | network | {'self-play ' if self.selfplay else ''}CPU-min | self-play games | rows | training "
            "samples | Elo ± 95% | games |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for arm in self.arms:
            for r in arm.repetitions:
                for p in r.points:
                    lines.append(
                        f"| {r.name} | {p.label()} | {p.cpu_minutes:.1f} | {p.selfplay_games:,} | {p.rows:,} | "
                        f"{p.train_step:,} | {p.elo:+.0f} ± {p.ci95:.0f} | {p.games} |"
                    )
        claimed = [arm for arm in self.arms if arm.claim or arm.expect]
        if claimed:  # arms such as the network's size claim nothing
            lines += [
                "",
                "## What the papers claim, and what we found",
                "",
                "| arm | the claim | ours |",
                "|---|---|---|",
            ]
            lines += [f"| {arm.title} | {arm.claim or '-'} | {arm.verdict} |" for arm in claimed]
        lines += ["", "## The arms' settings", ""]
        lines += [f"- **{arm.name}** ({arm.title}): {arm.description}" for arm in self.arms]
        return "\n".join(lines) + "\n"


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _against(difference: float | None, ci95: float | None, zero: str) -> str:
    """A difference to the full arm with its interval; ``zero`` for the full arm's own (no interval)."""
    if difference is None:
        return "-"
    return f"{difference:+.0f} ± {ci95:.0f}" if ci95 else zero


def verdict(arm: ArmReport, is_reference: bool) -> str:
    """Whether the arm's difference to the full arm (pooled over its repetitions) agrees with the
    paper's expectation."""
    if is_reference:
        return "the reference"
    if arm.vs_reference is None or arm.vs_reference_ci95 is None:
        return "not measured: no network exported, or no reference"
    low, high = arm.vs_reference - arm.vs_reference_ci95, arm.vs_reference + arm.vs_reference_ci95
    said = f"{arm.vs_reference:+.0f} ± {arm.vs_reference_ci95:.0f} against the full arm"
    worse, better = high < 0, low > 0
    if not arm.expect:
        return f"{said} (no claim to hold it against)"
    if (arm.expect == "worse" and worse) or (arm.expect == "better" and better):
        return f"agrees: {said}"
    if (arm.expect == "worse" and better) or (arm.expect == "better" and worse):
        return f"disagrees: {said}, a finding to investigate"
    return f"cannot tell: {said}, the interval spans 0"


def plot(report: AblationReport, path: Path) -> Path:
    """Elo of each repetition's rated generations against the CPU-minutes it had used, with 95% bars,
    one colour per arm, and the anchors as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.0, 5.0), dpi=120)
    for k, arm in enumerate(report.arms):
        label = arm.title if report.seeds == 1 else f"{arm.title} ({len(arm.repetitions)} repetitions)"
        for r in arm.repetitions:
            if not r.points:
                continue
            ax.errorbar(
                [p.cpu_minutes for p in r.points],
                [p.elo for p in r.points],
                yerr=[p.ci95 for p in r.points],
                marker="o",
                markersize=4,
                capsize=3,
                linewidth=1.2,
                color=f"C{k % 10}",
                label=label,
            )
            label = "_"  # one legend entry per arm
    for anchor in report.anchors:
        if not anchor.games:
            continue
        ax.axhline(anchor.elo, linestyle="--", linewidth=0.8, color="grey")
        ax.annotate(
            anchor.label,
            (0.005, anchor.elo),
            xycoords=("axes fraction", "data"),
            fontsize=7,
            color="dimgrey",
            va="bottom",
        )
    ax.set_xlim(left=0.0)
    ax.set_xlabel(
        "compute: CPU-minutes of the arm's self-play client"
        if report.selfplay
        else "compute: CPU-minutes of the arm's whole platform (self-play, training, server)"
    )
    ax.set_ylabel("Elo (the uniform random player 0)")
    ax.set_title(f"Ablation on {report.board}x{report.board}, {report.date}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def write(report: AblationReport, folder: Path) -> Path:
    """``ablation-DATE.md``, ``.json`` and ``.png`` in ``folder``; returns the Markdown's path."""
    stem = f"ablation-{report.date}"
    folder.mkdir(parents=True, exist_ok=True)
    plot(report, folder / f"{stem}.png")
    atomic_write(folder / f"{stem}.json", json.dumps(report.to_dict(), indent=1).encode())
    return atomic_write(folder / f"{stem}.md", report.markdown(f"{stem}.png").encode())
