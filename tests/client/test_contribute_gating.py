"""A worker's task supply while a candidate waits for its gating games: rating tasks are asked for
beside a full reserve of self-play, one at a time, and no more once the gating is decided."""

from __future__ import annotations

import threading
import time
import uuid

from client.contribute.netcache import NetworkCache
from client.contribute.server import ServerClient, ServerError
from client.contribute.sizing import Sizing
from client.contribute.tasks import TaskQueue
from tests.e2e.contributor import until


def _ref(name: str) -> dict:
    return {"name": name, "is_random": True, "url": None, "sha256": None, "bytes": 0}


class GatingServer(ServerClient):
    """A server in this process: a run with a random network, whose gating is switched by the test."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9", "t")
        self.gating = False
        self.no_rating_work = False  # a rating task request is answered 503 no_work
        self.asked: list[tuple[str, ...]] = []
        self.lock = threading.Lock()

    def current_run(self) -> dict:
        return {"run": "r", "network": _ref("r-random"), "settings_version": 1, "gating": self.gating}

    def newest_network(self, run: str) -> dict | None:
        return None

    def release(self, counts: dict) -> dict:
        return {"given_up": 0}

    def task(self, games: int = 1, kinds: tuple[str, ...] = ("selfplay", "rating")) -> dict:
        with self.lock:
            self.asked.append(tuple(kinds))
        if kinds == ("rating",):
            if self.no_rating_work:
                raise ServerError(503, "no_work", "no rating games are to be played now", "tasks/")
            body = {"kind": "rating", "networks": [_ref("r-random"), _ref("r-random")], "games": 2}
        else:
            body = {"kind": "selfplay", "network": _ref("r-random"), "games": games}
        return {**body, "id": str(uuid.uuid4()), "settings_version": 1, "settings": {}}

    def rating_requests(self) -> int:
        with self.lock:
            return self.asked.count(("rating",))


def _queue(tmp_path, server: GatingServer, kinds=("selfplay", "rating")) -> TaskQueue:
    # A reserve that one task fills and no wish to top it up: the ordinary requests stop, as a
    # worker's do once its reserve of two hours is full.
    return TaskQueue(
        server,
        NetworkCache(tmp_path),
        Sizing(parallel=2, fill_seconds=3600),
        look_seconds=0.1,
        prefetch_seconds=3600,
        kinds=kinds,
    )


def test_a_waiting_candidate_gets_rating_tasks_one_at_a_time_beside_a_full_reserve(tmp_path):
    server = GatingServer()
    queue = _queue(tmp_path, server)
    queue.start()
    try:
        until(lambda: queue.in_hand() >= 8, 10, "the reserve", step=0.02)
        time.sleep(0.5)  # several looks: no candidate, no rating request
        assert server.rating_requests() == 0 and queue.take_rating(0) is None

        server.gating = True
        until(lambda: server.rating_requests() == 1, 10, "a rating task request", step=0.02)
        task = queue.take_rating(5)
        assert task and task.kind == "rating"
        time.sleep(0.5)  # while it plays, none more is asked for
        assert server.rating_requests() == 1
        queue.finished(task, True)
        queue.finished(task, True)
        until(lambda: server.rating_requests() == 2, 10, "the next rating task, once the first was played", step=0.02)
        second = queue.take_rating(5)
        assert second and second.kind == "rating"

        server.gating = False  # decided: the next look says so, and no more are asked for
        time.sleep(0.3)
        queue.finished(second, True)
        queue.finished(second, True)
        time.sleep(0.5)
        assert server.rating_requests() == 2
        assert queue.fatal is None and queue.in_hand() >= 8
    finally:
        queue.close()


def test_a_gating_decided_since_the_look_costs_one_quiet_refusal_and_self_play_goes_on(tmp_path):
    server = GatingServer()
    server.gating = server.no_rating_work = True
    queue = _queue(tmp_path, server)
    queue.start()
    try:
        until(lambda: server.rating_requests() >= 2, 10, "rating requests at successive looks", step=0.02)
        assert queue.fatal is None and queue.in_hand() >= 8 and queue.take_rating(0) is None
        assert "waiting" not in queue.state  # the self-play requests are not held up
    finally:
        queue.close()


def test_a_worker_of_one_kind_asks_as_before(tmp_path):
    for kinds in (("selfplay",), ("rating",)):
        server = GatingServer()
        server.gating = True
        queue = _queue(tmp_path / kinds[0], server, kinds=kinds)
        queue.start()
        try:
            until(lambda: server.asked, 10, "a task request", step=0.02)  # noqa: B023
            time.sleep(0.4)
            assert all(asked == kinds for asked in server.asked), server.asked
        finally:
            queue.close()
