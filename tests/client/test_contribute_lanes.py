"""The worker's two lanes share its ``parallel``: while rating games play, no self-play game starts
beyond what is left of it; ``--parallel auto`` and a GPU's limits change how many that is; its
task requests describe its machine."""

from __future__ import annotations

import multiprocessing
import queue

from client.contribute.worker import Control, Worker, WorkerSpec


def test_rating_games_in_play_leave_self_play_only_the_rest_of_parallel(tmp_path):
    spec = WorkerSpec(
        index=0,
        device="cpu",
        server="http://127.0.0.1:9",
        token="t",
        instance_id="i",
        parallel=4,
        data_dir=str(tmp_path),
    )
    worker = Worker(spec, Control(multiprocessing.get_context("spawn")), queue.Queue())
    assert worker.room_for_selfplay()
    worker.selfplay_playing = 3
    assert worker.room_for_selfplay()
    worker.rating_playing = 1  # a rating task begins: the self-play game that ends next is not replaced
    assert not worker.room_for_selfplay()
    worker.selfplay_playing = 0
    worker.rating_playing = 4
    assert not worker.room_for_selfplay()
    worker.rating_playing = 3  # its last games: self-play fills what they leave
    assert worker.room_for_selfplay()


def _wait_on_stop(stop, waiting) -> None:
    import threading

    from client.contribute.worker import _StopView

    waiting.set()
    _StopView(stop, threading.Event()).wait(60)


def test_a_worker_killed_while_it_waits_does_not_block_the_supervisors_stop():
    import os
    import signal
    import threading
    import time

    context = multiprocessing.get_context("spawn")
    control = Control(context)
    waiting = context.Event()
    process = context.Process(target=_wait_on_stop, args=(control.stopping, waiting))
    process.start()
    assert waiting.wait(60)
    time.sleep(0.5)  # well inside its wait
    os.kill(process.pid, signal.SIGKILL)
    process.join()
    setter = threading.Thread(target=control.stopping.set, daemon=True)
    setter.start()
    setter.join(10)
    assert not setter.is_alive(), "the stop's set() waits for a killed worker"


def test_workers_on_the_cpu_share_its_cores_and_their_lanes_search_on_their_share(tmp_path, monkeypatch):
    """Two workers on a 2-core CPU get a core each, and a lane of a worker given one core builds its
    searches on one thread, where a thread of its own would have numba's default."""
    import os
    import threading

    import numba

    from client.contribute.worker import cpu_share
    from client.search.engine import BatchedSearch, NullEvaluator

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert cpu_share(["cpu"]) is None and cpu_share(["cuda:0", "cuda:1"]) is None
    assert cpu_share(["cpu", "cpu"]) == 4 and cpu_share(["cpu", "cpu", "cpu"]) == 2
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert cpu_share(["cpu", "cpu"]) == 1 and cpu_share(["cpu"] * 3) == 1
    if numba.config.NUMBA_NUM_THREADS < 2:
        return  # (one core: nothing to share)

    def threads_of_a_lane(cores: int | None) -> int:
        spec = WorkerSpec(0, "cpu", "http://127.0.0.1:9", "t", "i", 4, str(tmp_path), cores=cores)
        worker = Worker(spec, Control(multiprocessing.get_context("spawn")), queue.Queue())
        seen: list[int] = []
        lane = threading.Thread(
            target=worker._guard, args=(lambda: seen.append(BatchedSearch(NullEvaluator(), 4, 8).threads),)
        )
        lane.start()
        lane.join()
        assert not worker.errors
        return seen[0]

    assert threads_of_a_lane(1) == 1
    assert threads_of_a_lane(None) == min(2, numba.config.NUMBA_NUM_THREADS)


def test_parallel_auto_measures_once_per_network_size_and_a_hot_gpu_plays_its_share(tmp_path, monkeypatch):
    """With --parallel auto the worker plays the measured count (the queue sizes its tasks by it),
    keeps it for the next session of that size, and a GPU over its limits (its share in Control)
    plays that share of it."""
    from types import SimpleNamespace

    from client.contribute import autoparallel
    from client.search.engine import NullEvaluator
    from common.architecture import named_config
    from common.settings import SelfPlaySettings

    measured: list[int] = []

    def rate_at(count: int, seconds: float) -> float:
        measured.append(count)
        return 100.0 * min(count, 8)

    monkeypatch.setattr(autoparallel, "selfplay_rate", lambda evaluator, settings: rate_at)
    spec = WorkerSpec(0, "cpu", "http://127.0.0.1:9", "t", "i", 16, str(tmp_path), auto_parallel=True, gpu_share=0.5)
    control = Control(multiprocessing.get_context("spawn"))
    worker = Worker(spec, control, queue.Queue())
    settings = SelfPlaySettings(board_sizes=(9,), board_size_weights=(1.0,))
    assert worker.parallel_for(NullEvaluator(), settings) == 16 and not measured  # the random network
    network = SimpleNamespace(model=SimpleNamespace(config=named_config("tiny")))
    assert worker.parallel_for(network, settings) == 8  # the CPU takes no share of a GPU
    assert worker.parallel == 8 and worker.queue.sizing.parallel == 8 and measured
    count = len(measured)
    assert worker.parallel_for(network, settings) == 8 and len(measured) == count  # kept
    worker.selfplay_playing = 7
    assert worker.room_for_selfplay()
    control.set_share(0, 0.5)  # over a limit: half of the 8
    assert not worker.room_for_selfplay()
    worker.selfplay_playing = 3
    assert worker.room_for_selfplay()
    # On a GPU, --gpu-share takes its share of the measured count.
    gpu = Worker(
        WorkerSpec(1, "cuda:0", "http://127.0.0.1:9", "t", "i", 64, str(tmp_path), auto_parallel=True, gpu_share=0.5),
        control,
        queue.Queue(),
    )
    monkeypatch.setattr(autoparallel, "device_model", lambda device, cores: "a test GPU")
    assert gpu.parallel_for(network, settings) == 8  # half of the 16 where a GPU's rates stop rising here
    # A number given to --parallel is never measured.
    fixed = Worker(WorkerSpec(2, "cpu", "http://127.0.0.1:9", "t", "i", 12, str(tmp_path)), control, queue.Queue())
    before = len(measured)
    assert fixed.parallel_for(network, settings) == 12 and len(measured) == before


def test_task_requests_name_the_machine_the_device_and_its_evaluations_lately(tmp_path, monkeypatch):
    import platform

    spec = WorkerSpec(0, "cpu", "http://127.0.0.1:9", "t", "i", 4, str(tmp_path), cores=1)
    worker = Worker(spec, Control(multiprocessing.get_context("spawn")), queue.Queue())
    assert worker.queue.server.machine == worker.machine  # every task request carries it
    monkeypatch.setattr(platform, "node", lambda: "alice's\nbox" + "x" * 80)
    said = worker.machine()
    assert said["name"] == ("alice'sbox" + "x" * 80)[:64] and said["device"].endswith("CPU, 1 cores")
    assert said["evals_per_second"] is None  # no minute of play yet
    worker._evals.extend([(100.0, 0.0), (130.0, 30_000.0), (190.0, 90_000.0)])
    assert worker.machine()["evals_per_second"] == 1000.0
