"""The settings document of a run: its four sections."""

from __future__ import annotations

from dataclasses import dataclass, field

from common.settings.framework import Settings
from common.settings.gating import GatingSettings
from common.settings.match import MatchSettings
from common.settings.selfplay import SelfPlaySettings
from common.settings.training import TrainingSettings


@dataclass(frozen=True)
class RunSettings(Settings):
    """The settings document of a run, as the server versions it and sends it with every task:
    ``selfplay`` for self-play tasks, ``rating`` for rating (match) games, ``gating`` and
    ``training`` for the server's and the trainer's own use. Every key has a default, so ``{}`` is
    the paper's settings."""

    selfplay: SelfPlaySettings = field(default_factory=SelfPlaySettings)
    rating: MatchSettings = field(default_factory=MatchSettings)
    gating: GatingSettings = field(default_factory=GatingSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)
