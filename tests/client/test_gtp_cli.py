"""``python -m client gtp``'s options: who plays the moves for each combination of --model, --player
and --visits (a GUI given only a network file gets the network's search, not the random player)."""

from __future__ import annotations

import pytest

from client.__main__ import GTP_VISITS, _UsageError, build_parser, gtp_engine
from client.gtp.players import PolicyPlayer, RandomPlayer
from client.gtp.search_player import SearchPlayer

pytestmark = pytest.mark.kernels  # plays with the search: after the tests that need no kernel


def engine(*argv):
    return gtp_engine(build_parser().parse_args(["gtp", "--device", "cpu", *map(str, argv)]))


def test_a_network_file_alone_plays_the_search(network):
    e = engine("--model", network)
    assert isinstance(e.player, SearchPlayer) and e.player.visits == GTP_VISITS == 400
    assert e.evaluator is not None  # kata-raw-nn answers from the network
    assert "kata-analyze" in e.commands  # analysis GUIs get their command
    move = e.handle("genmove b")
    assert move.startswith("= ") and move.strip() != "= resign"


def test_the_precision_is_asked_for_by_name(network):
    assert engine("--model", network, "--precision", "fp32").evaluator.precision == "fp32"
    assert engine("--model", network, "--precision", "bf16").evaluator.precision == "bf16"  # checked, agrees
    with pytest.raises(SystemExit):
        build_parser().parse_args(["gtp", "--precision", "fp64"])


def test_visits_and_player_choose_otherwise(network):
    assert engine("--model", network, "--visits", "32").player.visits == 32
    policy = engine("--model", network, "--player", "policy")
    assert isinstance(policy.player, PolicyPlayer) and "kata-analyze" not in policy.commands
    assert isinstance(engine("--model", network, "--player", "random").player, RandomPlayer)


def test_without_a_network_file_the_random_player():
    assert isinstance(engine().player, RandomPlayer)
    assert isinstance(engine("--model", "random").player, RandomPlayer)  # random: no network
    searched = engine("--model", "random", "--visits", "8").player  # the search on a uniform policy
    assert isinstance(searched, SearchPlayer) and searched.visits == 8
    with pytest.raises(_UsageError, match="needs a network"):
        engine("--visits", "8")
    with pytest.raises(_UsageError, match="needs a network file"):
        engine("--model", "random", "--player", "policy")


def test_a_settings_file_gives_the_search_its_settings(tmp_path):
    import json

    from common.settings import MatchSettings, play_search

    assert engine("--model", "random", "--visits", "8").player.settings == play_search()
    written = MatchSettings().to_dict()
    written["search"].update(score_utility_factor=0.0, cpuct=0.9)
    document = tmp_path / "match.json"
    document.write_text(json.dumps(written))
    settings = engine("--model", "random", "--visits", "8", "--settings", document).player.settings
    assert settings == play_search().replace(score_utility_factor=0.0, cpuct=0.9)
    document.write_text('{"search": {"cpuct": -1}}')
    with pytest.raises(_UsageError, match=r"--settings: .*search\.cpuct"):
        engine("--model", "random", "--visits", "8", "--settings", document)
