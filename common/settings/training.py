"""How the run's networks are trained: the window, the budget, the optimizer, exports."""

from __future__ import annotations

from dataclasses import dataclass

from common.architecture import NAMED_SIZES
from common.settings.framework import Settings, at, need, setting, show


@dataclass(frozen=True)
class TrainingSettings(Settings):
    """How the run's networks are trained (the trainer reads this part; clients ignore it). Values
    from the paper's section 4.7 unless said otherwise.

    The window: the newest ``window_rows(N)`` rows of the ``N`` the run received (rows of the random
    network counted up to ``window_c``), ``c (1 + beta ((N/c)^alpha - 1) / alpha)``; training starts
    once ``window_c`` rows have arrived. The budget: ``samples_per_row`` training samples for each
    row received, every one, the random network's too (KataGo's ``-max-train-bucket-per-new-data``).
    Learning rate per sample ``learning_rate (lr_decay T + 1)^(-4/3)`` after ``T`` samples of a
    network's training, times ``early_lr_factor`` for its first ``early_lr_samples`` (KataGo's main
    run: a third for each network's first 5 million samples, against early instability; 0: none),
    SGD with ``momentum``, the L2 penalty ``l2 |theta|^2``, the gradient norm of
    a batch's mean loss clipped at ``grad_clip``. Every ``snapshot_every`` samples the weights enter
    an exponential moving average (``ema_decay``); every ``export_every`` samples that average becomes
    a candidate network.

    Progressive sizes (section 4.6): ``next_architecture`` (empty: none) is trained alongside on the
    same data with ``next_lr_decay`` and takes over once its loss on held-out rows is lower. One
    game in ``holdout_one_in`` (chosen by its rows' content; 0: none) is held out of training; the
    newest ``validation_rows`` of them measure the networks. ``shuffle_rows`` rows are shuffled together at a
    time (memory against mixing)."""

    architecture: str = "b6c96"
    next_architecture: str = ""
    window_c: int = setting(250_000, 1, 10**12)
    window_alpha: float = setting(0.75, 0.0, 1.0, lo_open=True)
    window_beta: float = setting(0.4, 0.0, 10.0, lo_open=True)
    samples_per_row: float = setting(4.0, 0.0, 1000.0, lo_open=True)
    batch_size: int = setting(256, 1, 65536)
    learning_rate: float = setting(6e-5, 0.0, 1.0, lo_open=True)
    lr_decay: float = setting(1e-7, 0.0, 1.0)  # lambda: 1e-6 x {0.1, 0.075, 0.05} for b6c96, b10c128, b15c192
    next_lr_decay: float = setting(7.5e-8, 0.0, 1.0)
    early_lr_samples: int = setting(0, 0, 10**15)
    early_lr_factor: float = setting(1.0 / 3.0, 0.0, 1.0, lo_open=True)
    momentum: float = setting(0.9, 0.0, 1.0, hi_open=True)
    l2: float = setting(3e-5, 0.0, 1.0)
    # not in the paper: a cap on rare gradient spikes, far above a normal batch's norm
    grad_clip: float = setting(10.0, 0.0, lo_open=True)
    snapshot_every: int = setting(250_000, 1, 10**15)
    export_every: int = setting(1_000_000, 1, 10**15)
    ema_decay: float = setting(0.75, 0.0, 1.0, hi_open=True)
    symmetries: bool = True  # a random one of the 8 board symmetries per row
    # The ownership and score targets (section 4.1); off, their loss terms weigh 0 (the paper's
    # NoAux ablation, without its removal of the opponent policy target).
    ownership_score_targets: bool = True
    holdout_one_in: int = setting(20, 0, 10**6)  # KataGo's shuffle.py holds out 5% of its files
    validation_rows: int = setting(10_000, 0, 10**8)
    shuffle_rows: int = setting(100_000, 1, 10**9)

    def check(self, path: str) -> None:
        for name in ("architecture", "next_architecture"):
            value = getattr(self, name)
            need(
                value in NAMED_SIZES or (name == "next_architecture" and value == ""),
                at(path, name),
                f"must be one of {', '.join(NAMED_SIZES)}, got {show(value)}",
            )
        need(
            self.next_architecture != self.architecture,
            at(path, "next_architecture"),
            f"must differ from architecture ({self.architecture!r})",
        )
        need(
            self.window_c >= self.batch_size,
            at(path, "window_c"),
            f"must be at least batch_size ({self.batch_size}), got {self.window_c}",
        )
        need(
            self.export_every >= self.snapshot_every,
            at(path, "export_every"),
            f"must be at least snapshot_every ({self.snapshot_every}), got {self.export_every}",
        )
        need(self.holdout_one_in != 1, at(path, "holdout_one_in"), "1 would hold out every game; use 0 for none")

    def window_rows(self, total_rows: int) -> int:
        """Rows in the training window once the run received ``total_rows`` (random-network rows
        counted up to ``window_c``): the paper's formula, never more than the rows there are."""
        c, alpha = float(self.window_c), self.window_alpha
        grown = c * (1.0 + self.window_beta * ((max(total_rows, c) / c) ** alpha - 1.0) / alpha)
        return int(min(total_rows, grown))

    def lr_decay_for(self, architecture: str) -> float:
        return self.next_lr_decay if architecture == self.next_architecture else self.lr_decay

    def learning_rate_at(self, samples: int, architecture: str) -> float:
        """The per-sample learning rate after ``samples`` training samples of a network."""
        rate = self.learning_rate * (self.lr_decay_for(architecture) * samples + 1.0) ** (-4.0 / 3.0)
        return rate * self.early_lr_factor if samples < self.early_lr_samples else rate
