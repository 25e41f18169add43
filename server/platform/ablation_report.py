"""The ablation's report: a table of each arm's strength against the anchors, what the paper claims
beside what we found, and a plot of Elo against compute per arm (matplotlib), as Markdown, JSON and
PNG (``ablation-DATE.md``, ``.json`` and ``.png``)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from common.files import atomic_write


@dataclass
class Point:
    """A rated generation of an arm, placed on the compute axis."""

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
class ArmReport:
    name: str
    title: str
    description: str
    claim: str
    expect: str
    architecture: str
    evals_per_s: float | None
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
    vs_reference: float | None = None  # the final network's Elo minus the reference's
    vs_reference_ci95: float | None = None
    verdict: str = ""

    @property
    def final(self) -> Point | None:
        return self.points[-1] if self.points else None


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
    cpu_minutes: float  # each arm's budget
    machine: str
    command: str
    visits: int
    reference: str | None  # the reference network's player key
    anchors: list[Anchor]
    arms: list[ArmReport]
    pairings: int
    games: int
    fit_iterations: int

    def to_dict(self) -> dict:
        return asdict(self)

    def markdown(self, plot_file: str) -> str:
        b = self.board
        levels = [a.label.removeprefix("GNU Go ") for a in self.anchors if a.key.startswith("gnugo")]
        gnugo = f"GNU Go at {', '.join(levels)}" if levels else "no GNU Go (not installed)"
        lines = [
            f"# Ablation on {b}x{b}, {self.date}",
            "",
            f"Each arm ran the whole platform (self-play client, trainer, gating) from the random network for "
            f"{self.cpu_minutes:g} CPU-minutes of its processes on {self.machine}, in its own data folder. Its "
            f"generations then played the anchors (the uniform random player, {gnugo}) and the full arm's final "
            f"network: {self.games:,} games in {self.pairings} pairings at {self.visits} visits per move, rated in "
            f"one Bradley-Terry fit with the uniform random player at 0 ({self.fit_iterations} Newton steps).",
            "",
            "Reproduce:",
            "",
            "```sh",
            self.command,
            "```",
            "",
            "## The arms",
            "",
            "| arm | final network | Elo ± 95% | against the full arm ± 95% | CPU-min | minutes (load) | self-play "
            "games | rows | training samples | accepted / exported | network, evaluations/s |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for arm in self.arms:
            final = arm.final
            name = final.label() if final else "(none exported)"
            elo = f"{final.elo:+.0f} ± {final.ci95:.0f}" if final else "-"
            against = (
                f"{arm.vs_reference:+.0f} ± {arm.vs_reference_ci95:.0f}"
                if arm.vs_reference is not None and arm.vs_reference_ci95
                else ("0 (the reference)" if arm.vs_reference is not None else "-")
            )
            load = f" ({arm.mean_load:.1f})" if arm.mean_load is not None else ""
            speed = f"{arm.architecture}, {arm.evals_per_s:,.0f}" if arm.evals_per_s else arm.architecture
            lines.append(
                f"| {arm.title} | {name} | {elo} | {against} | {arm.cpu_minutes:.1f} | {arm.wall_minutes:.1f}{load} | "
                f"{arm.selfplay_games:,} | {arm.rows:,} | {arm.training_samples:,} | {arm.accepted} / "
                f"{arm.candidates} | {speed} |"
            )
        lines += [
            "",
            "CPU-min: the CPU time its platform's processes used (user and system, all sittings); minutes: the "
            "wall time, with the mean 1-minute load average of the machine while it ran. Evaluations/s: its "
            "network at the client's batch on this board, one thread, measured before the rating.",
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
            "| arm | network | CPU-min | self-play games | rows | training samples | Elo ± 95% | games |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for arm in self.arms:
            for p in arm.points:
                network = p.label()
                lines.append(
                    f"| {arm.name} | {network} | {p.cpu_minutes:.1f} | {p.selfplay_games:,} | {p.rows:,} | "
                    f"{p.train_step:,} | {p.elo:+.0f} ± {p.ci95:.0f} | {p.games} |"
                )
        lines += ["", "## What the papers claim, and what we found", "", "| arm | the claim | ours |", "|---|---|---|"]
        for arm in self.arms:
            if arm.claim or arm.expect:
                lines.append(f"| {arm.title} | {arm.claim or '-'} | {arm.verdict} |")
        lines += ["", "## The arms' settings", ""]
        lines += [f"- **{arm.name}** ({arm.title}): {arm.description}" for arm in self.arms]
        return "\n".join(lines) + "\n"


def verdict(arm: ArmReport, is_reference: bool) -> str:
    """Whether the arm's final network against the reference agrees with the paper's expectation."""
    if is_reference:
        return "the reference"
    if arm.final is None or arm.vs_reference is None or arm.vs_reference_ci95 is None:
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
    """Elo of each arm's rated generations against the CPU-minutes the arm had used, with 95% bars,
    and the anchors as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.0, 5.0), dpi=120)
    for arm in report.arms:
        if arm.points:
            ax.errorbar(
                [p.cpu_minutes for p in arm.points],
                [p.elo for p in arm.points],
                yerr=[p.ci95 for p in arm.points],
                marker="o",
                markersize=4,
                capsize=3,
                linewidth=1.2,
                label=arm.title,
            )
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
    ax.set_xlabel("compute: CPU-minutes of the arm's whole platform (self-play, training, server)")
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
