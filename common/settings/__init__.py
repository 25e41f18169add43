"""Task settings: how to search, how to start and play self-play games, and how to play match games.

The server sends these with every task as JSON (``to_dict`` / ``from_dict``); the client's defaults
are the values of KataGo's paper (sections 5-6, Appendix C for self-play, Appendix D for match and
gating games) and of its methods page where the paper gives none. Every game records the settings
it was played with in its SGF.

A malformed settings object is refused as a whole with :class:`SettingsError`, whose message names
the key (as a dotted path) and what is wrong with it; unknown keys are errors too, so a typo never
silently falls back to a default.

One module per section (``search``, ``selfplay``, ``match``, ``gating``, ``training``, ``run``),
on the framework in ``framework``; this package names them all.
"""

from common.settings.framework import SettingsError, sizes_in_play
from common.settings.gating import GATING_RULES, NO_GATING, GatingSettings
from common.settings.match import MatchSettings, play_search
from common.settings.run import RunSettings
from common.settings.search import SearchSettings
from common.settings.selfplay import RulesChoice, SelfPlaySettings
from common.settings.training import TrainingSettings

__all__ = [
    "GATING_RULES",
    "NO_GATING",
    "GatingSettings",
    "MatchSettings",
    "RulesChoice",
    "RunSettings",
    "SearchSettings",
    "SelfPlaySettings",
    "SettingsError",
    "TrainingSettings",
    "play_search",
    "sizes_in_play",
]
