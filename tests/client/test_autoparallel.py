"""``--parallel auto``: the games at once where evaluations per second stop rising, measured once per
device, network size and board and kept; the random network is not measured; a real measurement
plays self-play with a real network."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from client.contribute import autoparallel
from client.contribute import config as client_config
from client.contribute.autoparallel import RISE, ParallelCache, choose, games_at_once, measure, selfplay_rate
from client.search.engine import NullEvaluator
from common.architecture import named_config
from common.settings import SelfPlaySettings

pytestmark = pytest.mark.kernels  # the last test plays with the search

SETTINGS = SelfPlaySettings(board_sizes=(9,), board_size_weights=(1.0,), visits=8, cheap_visits=2, max_moves=60)


def test_the_count_past_which_evaluations_stop_rising():
    assert choose({16: 1000.0, 32: 1900.0, 64: 3000.0, 128: 3100.0, 256: 3200.0}) == 64
    assert choose({16: 1000.0, 32: 900.0}) == 16  # slower with more: the first
    assert choose({4: 100.0, 8: 100.0 * RISE}) is None  # just worth it: still rising
    assert choose({4: 100.0}) is None


def test_measuring_stops_once_they_stop_rising_and_takes_the_largest_if_they_never_do():
    # A GPU whose speed saturates at 128 games: throughput rises with the batch up to there.
    asked = []

    def rate_at(count: int, seconds: float) -> float:
        asked.append((count, seconds))
        return 50.0 * min(count, 128)

    count, rates = measure(rate_at, (16, 32, 64, 128, 256, 512), 4.0)
    assert count == 128 and sorted(rates) == [16, 32, 64, 128, 256]  # 512 was never needed
    assert asked[0] == (16, autoparallel.WARM_SECONDS) and all(s == 4.0 for _, s in asked[1:])
    count, rates = measure(lambda c, s: float(c), (4, 8, 16), 1.0)
    assert count == 16 and len(rates) == 3

    def out_of_memory_past_64(count: int, seconds: float) -> float:
        if count > 64:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return float(count)

    assert measure(out_of_memory_past_64, (16, 32, 64, 128, 256), 1.0) == (64, {16: 16.0, 32: 32.0, 64: 64.0})


def evaluator(name: str = "tiny") -> SimpleNamespace:
    return SimpleNamespace(model=SimpleNamespace(config=named_config(name)))


def test_kept_per_device_network_size_and_board_and_measured_again_when_one_changes(tmp_path):
    cache = ParallelCache(tmp_path / "parallel")
    measured = []

    def rate_at(count: int, seconds: float) -> float:
        measured.append(count)
        return 10.0 * min(count, 16)

    assert games_at_once(cache, "cpu", None, evaluator(), SETTINGS, rate_at) == 16
    first = len(measured)
    assert first >= 3
    assert games_at_once(cache, "cpu", None, evaluator(), SETTINGS, rate_at) == 16  # kept
    assert len(measured) == first
    files = list((tmp_path / "parallel").glob("*.json"))
    assert len(files) == 1 and '"parallel": 16' in files[0].read_text()
    # Another network size, another board, other cores: each measured anew.
    games_at_once(cache, "cpu", None, evaluator("b3c32"), SETTINGS, rate_at)
    games_at_once(
        cache, "cpu", None, evaluator(), SelfPlaySettings(board_sizes=(13,), board_size_weights=(1.0,)), rate_at
    )
    games_at_once(cache, "cpu", 1, evaluator(), SETTINGS, rate_at)
    assert len(list((tmp_path / "parallel").glob("*.json"))) == 4
    # A damaged file is measured again rather than trusted.
    files[0].write_text("{not json")
    before = len(measured)
    assert games_at_once(cache, "cpu", None, evaluator(), SETTINGS, rate_at) == 16 and len(measured) > before
    # The random network needs no evaluation: it is not measured.
    assert games_at_once(cache, "cpu", None, NullEvaluator(), SETTINGS, rate_at) is None


def test_auto_is_the_default_and_a_number_or_auto_is_taken_by_name(tmp_path):
    path = tmp_path / "client.json"
    assert client_config.load(path, environ={}).parallel is None  # auto
    assert client_config.load(path, environ={"SENTE_PARALLEL": "auto"}).parallel == "auto"
    assert client_config.load(path, environ={}, flags={"parallel": "24"}).parallel == 24
    with pytest.raises(client_config.ConfigError, match="--parallel: 'many' is not a whole number of games or auto"):
        client_config.load(path, environ={}, flags={"parallel": "many"})


def test_a_real_measurement_plays_self_play_with_the_network():
    from client.evaluator import Evaluator
    from common.nn.model import Model

    rate_at = selfplay_rate(Evaluator(Model(named_config("tiny")), "cpu"), SETTINGS)
    assert rate_at(4, 0.5) > 0
