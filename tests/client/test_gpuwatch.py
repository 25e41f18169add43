"""The GPUs' limits and their owner: readings injected through the reader's interface step a hot or
power-hungry GPU down to fewer games and a pause and back up past a margin, pause it while another
program uses it, ask its worker for a canary check that games held then must wait for, and show
in the status; the settings are checked by name."""

from __future__ import annotations

import multiprocessing

import pytest

from client.contribute import config as client_config
from client.contribute.canary import CanaryGuard
from client.contribute.gpuwatch import (
    FREE_SECONDS,
    LOOK_SECONDS,
    STEP_SECONDS,
    UNREAD_SECONDS,
    BusyGuard,
    GpuWatch,
    HeatGuard,
    others_on,
    parse_power,
)
from client.contribute.nvml import GpuReading, NvmlReader
from client.contribute.status import Status
from client.contribute.worker import Control


def hot(temperature: float, power: float | None = None, limit: float | None = 250.0, pids=()) -> GpuReading:
    return GpuReading(temperature=temperature, power=power, power_limit=limit, processes=frozenset(pids))


def feed(guard: HeatGuard, reading: GpuReading, start: float, seconds: float) -> tuple[list[int], float]:
    """Readings every 2 s for ``seconds``: the steps taken, and the time after the last."""
    steps, t = [], start
    while t < start + seconds:
        step = guard.observe(reading, t)
        if step:
            steps.append(step)
        t += 2.0
    return steps, t


def test_a_hot_gpu_steps_down_to_a_pause_and_back_up_only_past_the_margin():
    guard = HeatGuard(max_temperature=80)
    steps, t = feed(guard, hot(79), 0.0, 3 * STEP_SECONDS)
    assert steps == [] and guard.share == 1.0  # under the limit: all its games
    steps, t = feed(guard, hot(86), t, STEP_SECONDS + 2)
    assert steps == [-1] and guard.share == 0.5  # one step per STEP_SECONDS, not one per reading
    steps, t = feed(guard, hot(86), t, 2 * STEP_SECONDS + 2)
    assert steps == [-1, -1] and guard.share == 0.0  # a quarter, then paused
    steps, t = feed(guard, hot(90), t, 2 * STEP_SECONDS)
    assert steps == [] and guard.share == 0.0  # no lower than a pause
    steps, t = feed(guard, hot(77), t, 3 * STEP_SECONDS)
    assert steps == [] and guard.share == 0.0  # under the limit but within 5 degrees of it: it waits
    steps, t = feed(guard, hot(74), t, 3 * STEP_SECONDS + 2)
    assert steps == [1, 1, 1] and guard.share == 1.0  # cool: up a step at a time to all its games


def test_one_hot_reading_in_a_cool_window_does_not_step():
    guard = HeatGuard(max_temperature=80)
    t = 0.0
    for degrees in [70, 70, 70, 95, 70, 70, 70, 70, 70, 70, 70]:
        assert guard.observe(hot(degrees), t) == 0 or guard.level == 0
        t += 2.0
    assert guard.level == 0  # the window's mean (72) is what counts


def test_power_in_watts_or_as_a_share_of_the_cards_own_limit():
    assert parse_power("200") == (200.0, False) and parse_power("200W") == (200.0, False)
    assert parse_power(" 80% ") == (80.0, True)
    for bad in ("", "lots", "0", "-5", "120%", "0%", "inf"):
        with pytest.raises(ValueError):
            parse_power(bad)
    watts = HeatGuard(max_power="200")
    share = HeatGuard(max_power="80%")
    assert watts.watts(hot(60, 240, limit=300)) == 200.0 and share.watts(hot(60, 240, limit=300)) == 240.0
    assert share.watts(hot(60, 240, limit=None)) is None  # a card that gives no limit: the share cannot act
    steps, _ = feed(share, hot(60, 250, limit=300), 0.0, STEP_SECONDS + 2)
    assert steps == [-1]  # 250 W over 80% of 300 W
    steps, _ = feed(HeatGuard(max_power="80%"), hot(60, 230, limit=300), 0.0, STEP_SECONDS + 2)
    assert steps == []
    # Back up only under 90% of the limit: 210 W stays, 200 W steps up.
    steps, t = feed(share, hot(60, 230, limit=300), 100.0, STEP_SECONDS + 2)
    assert steps == [] and share.level == 1
    steps, _ = feed(share, hot(60, 200, limit=300), t, STEP_SECONDS + 2)
    assert steps == [1] and share.level == 0


def test_another_program_pauses_a_gpu_until_it_has_been_free_a_while():
    guard = BusyGuard()
    assert not guard.observe(0, 0.0)
    assert guard.observe(1, 2.0)
    assert guard.observe(0, 4.0) and guard.observe(0, 4.0 + FREE_SECONDS - 1)  # free, but not for long yet
    assert guard.observe(1, 20.0)  # back: the wait starts again
    assert guard.observe(0, 22.0) and not guard.observe(0, 22.0 + FREE_SECONDS)
    # The client's own processes are not another program; inside a container NVML gives the host's
    # process ids, none of them ours: the processes beyond this GPU's workers count.
    assert others_on(hot(60, pids=(100, 200)), {1, 100}, 1) == 1
    assert others_on(hot(60, pids=(100,)), {1, 100}, 1) == 0
    assert others_on(hot(60, pids=(9100,)), {1, 100}, 1) == 0
    assert others_on(hot(60, pids=(9100, 9200)), {1, 100}, 1) == 1


class Readings:
    """A reader whose readings the test sets."""

    def __init__(self) -> None:
        self.now: dict[str, GpuReading | None] = {}

    def read(self, device: str) -> GpuReading | None:
        return self.now.get(device)


def test_the_watch_sets_each_workers_share_asks_for_a_check_and_shows_the_gpus():
    control = Control(multiprocessing.get_context("spawn"))
    status = Status(server="https://example.org", username="alice")
    reader = Readings()
    devices = {0: "cuda:0", 1: "cuda:1", 2: "cpu"}
    watch = GpuWatch(reader, devices, control, status, lambda: {10, 11, 12}, max_temperature=80, pause_when_busy=True)
    reader.now = {"cuda:0": hot(88, 190, pids=(11,)), "cuda:1": hot(60, 120, pids=(12,))}
    t = 0.0
    while t <= STEP_SECONDS:
        watch.look(t)
        t += LOOK_SECONDS
    assert (control.shares[0], control.shares[1], control.shares[2]) == (0.5, 1.0, 1.0)
    assert control.games_at_once(0, 64) == 32 and control.games_at_once(1, 64) == 64 and not control.held(0)
    assert control.rechecks[0] == 1 and control.rechecks[1] == 0  # a check asked of the hot one only
    assert status.gpus == {0: "88 °C, 190 of 250 W; over its limit: 50% of its games at once", 1: "60 °C, 120 of 250 W"}
    assert 2 not in status.gpus  # the CPU is not watched
    assert "cuda:0 88 °C" in Status(**{**status.__dict__, "workers": {0: {"device": "cuda:0"}}}).line()

    # A game starts on the second GPU: it waits, and plays again once the GPU is free a while.
    reader.now["cuda:1"] = hot(60, 120, pids=(12, 4242))
    watch.look(t)
    assert control.held(1) and control.games_at_once(1, 64) == 0
    assert status.gpus[1] == "60 °C, 120 of 250 W; paused: another program uses it"
    reader.now["cuda:1"] = hot(60, 120, pids=(12,))
    for _ in range(int(FREE_SECONDS / LOOK_SECONDS) + 1):
        t += LOOK_SECONDS
        watch.look(t)
    assert not control.held(1) and control.shares[1] == 1.0

    # Readings that stop do not hold a GPU for good: after UNREAD_SECONDS it plays all its games.
    reader.now = {"cuda:0": None, "cuda:1": hot(60, 120, pids=(12,))}
    start = t
    while t < start + UNREAD_SECONDS - LOOK_SECONDS:
        t += LOOK_SECONDS
        watch.look(t)
    assert control.shares[0] == 0.5 and status.gpus[0] == "cannot be read"
    t += 2 * LOOK_SECONDS
    watch.look(t)
    assert control.shares[0] == 1.0 and watch.heat[0].level == 0

    # A share never leaves a worker with no game while it is not held.
    control.set_share(3, 0.25)
    assert control.games_at_once(3, 2) == 1
    control.set_share(3, 0.0)
    assert control.held(3) and not control.held(4)
    control.paused.set()
    assert control.held(4)


def test_after_a_limit_is_passed_held_games_wait_for_a_check_begun_later():
    guard = CanaryGuard("cuda:0", lambda name: None)
    guard.passed_at["net"] = 100.0  # a check passed at 100
    assert guard.vouched("cuda:0", ("net",), 90.0)  # a game that ended at 90
    guard.last_check = 50.0
    guard.distrust(105.0)  # the GPU went over its limit at 105, after that check
    assert not guard.vouched("cuda:0", ("net",), 90.0) and guard.last_check == 0.0  # and a check is due now
    guard.passed_at["net"] = 120.0
    assert guard.vouched("cuda:0", ("net",), 90.0)


def test_without_nvml_or_a_gpu_the_reader_says_why():
    assert NvmlReader.open(["cpu"]) == "no NVIDIA GPU is played on"
    reason = NvmlReader.open(["cuda:0"])
    assert isinstance(reason, str) and "NVML" in reason  # this machine has no NVIDIA driver


def test_the_settings_come_from_a_flag_the_environment_or_the_file_and_bad_ones_are_named(tmp_path):
    path = tmp_path / "client.json"
    path.write_text('{"max_temperature": 83, "max_power": "80%", "pause_when_busy": true}')
    config = client_config.load(path, environ={})
    assert (config.max_temperature, config.max_power, config.pause_when_busy) == (83.0, "80%", True)
    config = client_config.load(path, environ={"SENTE_MAX_POWER": "180", "SENTE_PAUSE_WHEN_BUSY": "no"})
    assert (config.max_power, config.pause_when_busy) == ("180", False)
    assert client_config.load(path, environ={}, flags={"max_temperature": "75"}).max_temperature == 75.0
    with pytest.raises(client_config.ConfigError, match="--max-temperature: 'hot' is not a temperature"):
        client_config.load(path, environ={}, flags={"max_temperature": "hot"})
    with pytest.raises(client_config.ConfigError, match="--max-temperature: '200': a GPU's temperature limit is"):
        client_config.load(path, environ={}, flags={"max_temperature": "200"})
    with pytest.raises(client_config.ConfigError, match="environment variable SENTE_MAX_POWER: '150%': a share"):
        client_config.load(path, environ={"SENTE_MAX_POWER": "150%"})
    with pytest.raises(client_config.ConfigError, match="pause_when_busy: 'sometimes' is not true or false"):
        path.write_text('{"pause_when_busy": "sometimes"}')
        client_config.load(path, environ={})


def test_the_client_watches_its_gpus_with_the_options_given_or_says_once_why_it_cannot(tmp_path, monkeypatch, caplog):
    import argparse
    import logging
    import os
    from types import SimpleNamespace

    from client.contribute import app, options

    parser = argparse.ArgumentParser()
    options.add_arguments(parser)
    given = ["--server", "http://127.0.0.1:9", "--config", str(tmp_path / "client.json")]
    given += ["--data-dir", str(tmp_path / "data"), "--max-power", "80%", "--pause-when-busy"]
    contributor = app._Contributor(parser.parse_args(given))
    status = Status(server="http://127.0.0.1:9", username="alice")
    workers = SimpleNamespace(pids=lambda: [4242])
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(contributor, "gpu_reader", lambda devices: "NVML cannot be used: Driver Not Loaded")
    assert contributor._gpu_watch(["cuda:0"], status, workers) is None
    assert caplog.text.count("--max-power and --pause-when-busy cannot act: NVML cannot be used") == 1
    reader = Readings()
    monkeypatch.setattr(contributor, "gpu_reader", lambda devices: reader)
    watch = contributor._gpu_watch(["cuda:0", "cpu"], status, workers)
    assert watch is not None and watch.devices == {0: "cuda:0"} and watch.pause_when_busy
    assert watch.heat[0].max_power == "80%" and watch.heat[0].max_temperature is None
    assert watch.ours() == {os.getpid(), 4242}
    assert "act on NVIDIA GPUs only, not on cpu" in caplog.text
