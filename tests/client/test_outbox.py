"""The outbox: games survive restarts and crashes, go out once, and come back later on failures."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time

import pytest

from client.contribute.outbox import (
    DELIVERED,
    FATAL,
    REJECTED,
    RETRY,
    Outbox,
    Outcome,
    outcome_of_status,
)

META = {"game_id": "g-1", "kind": "training"}


def put(outbox: Outbox, game_id: str, npz: bool = True):
    return outbox.put(
        "training",
        "2b0f1c9e-0000-4000-8000-000000000000",
        dict(META, game_id=game_id),
        f"(;GM[1]GN[{game_id}])".encode(),
        b"rows" if npz else None,
    )


def test_games_wait_on_disk_until_the_server_confirms_them(tmp_path):
    outbox = Outbox(tmp_path)
    a = put(outbox, "g-a")
    put(outbox, "g-b", npz=False)
    assert a.sgf.read_bytes() == b"(;GM[1]GN[g-a])" and a.npz.read_bytes() == b"rows"
    # A new outbox on the same directory (the client started again) finds both, oldest first.
    again = Outbox(tmp_path)
    assert [e.game_id for e in again.pending()] == ["g-a", "g-b"]
    assert again.pending()[1].npz is None
    assert json.loads(again.pending()[0].metadata)["game_id"] == "g-a"
    sent = []
    assert again.deliver_due(lambda e: sent.append(e.game_id) or Outcome(DELIVERED)) is None
    assert sent == ["g-a", "g-b"] and again.pending() == [] and again.counts.delivered == 2
    assert not any((tmp_path / "pending").iterdir())
    assert Outbox(tmp_path).pending() == []


def put_rating(outbox: Outbox, game_id: str):
    meta = dict(META, game_id=game_id, kind="rating")
    return outbox.put("rating", "2b0f1c9e-0000-4000-8000-000000000001", meta, b"(;GM[1])", None)


def test_rating_games_go_out_before_older_self_play_games(tmp_path):
    outbox = Outbox(tmp_path)
    put(outbox, "g-a")
    put_rating(outbox, "r-a")
    put(outbox, "g-b")
    put_rating(outbox, "r-b")
    assert [e.game_id for e in Outbox(tmp_path).pending()] == ["r-a", "r-b", "g-a", "g-b"]


def test_a_rating_game_finished_behind_a_backlog_goes_out_within_a_pass(tmp_path):
    """The sender's pass over a long backlog ends after PASS_SECONDS and looks again: a rating game
    put meanwhile goes out next, not after every self-play game that was there before it."""
    from client.contribute.delivery import Delivery
    from client.contribute.status import Status

    outbox = Outbox(tmp_path)
    for k in range(200):
        put(outbox, f"g-{k:03d}")
    sent: list[str] = []

    class Server:  # the upload's answer, after the time a real one takes on a busy server
        def upload(self, entry):
            time.sleep(0.02)
            sent.append(entry.game_id)
            return Outcome(DELIVERED)

    delivery = Delivery(Server(), outbox, Status("http://127.0.0.1:9", "alice"), 5.0, lambda *a: None)
    delivery.start()
    deadline = time.monotonic() + 60
    try:
        while len(sent) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        put_rating(Outbox(tmp_path), "r-late")  # another process (a worker) puts it
        while "r-late" not in sent and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        delivery.stop()
    late = sent.index("r-late")
    assert late < 100, late  # within a pass (PASS_SECONDS), not after the 4 s the backlog takes
    assert sorted(sent[:late]) == sent[:late] and len(sent) > late  # the backlog went on after it


def test_failures_back_off_with_jitter_up_to_the_cap_and_honour_retry_after(tmp_path):
    outbox = Outbox(tmp_path, backoff_start=5, backoff_cap=3600, rng=random.Random(1))
    entry = put(outbox, "g-a")
    delays = []
    now = 1000.0
    for _ in range(12):
        outbox.deliver_due(lambda e: Outcome(RETRY, "503: busy"), now=now)
        delays.append(entry.due - now)
        now = entry.due
    for k, d in enumerate(delays):
        full = min(3600, 5 * 2**k)
        assert full / 2 <= d <= full
    assert max(delays) > 1800 and outbox.counts.failed_attempts == 12
    # Not due: not tried.
    tried = []
    outbox.deliver_due(lambda e: tried.append(e) or Outcome(DELIVERED), now=now - 1)
    assert tried == []
    # The server's Retry-After wins when it asks for longer.
    other = put(outbox, "g-b")
    outbox.deliver_due(
        lambda e: Outcome(RETRY, "429", retry_after=7200.0) if e is other else Outcome(RETRY, "x"), now=now
    )
    assert other.due - now == pytest.approx(7200.0)
    # ... and the pass ends there: no other game goes out before the wait is over.
    third = put(outbox, "g-c")
    tried = []

    def busy(e):
        tried.append(e.game_id)
        return Outcome(RETRY, "429: too many requests", retry_after=30.0)

    outcome = outbox.deliver_due(busy, now=now + 10**5)
    assert outcome.retry_after == 30.0 and tried == ["g-a"] and (third.due, third.attempts) == (0.0, 0)
    # A sender that raises (connection refused, timeout) is a retry, not a crash.
    outbox.deliver_due(lambda e: (_ for _ in ()).throw(ConnectionError("refused")), now=now + 10**6)
    assert "ConnectionError: refused" in outbox.counts.last_error and len(outbox.pending()) == 3


def test_a_refused_game_is_kept_aside_with_the_servers_message(tmp_path):
    outbox = Outbox(tmp_path)
    put(outbox, "g-bad")
    put(outbox, "g-good")
    outbox.deliver_due(
        lambda e: (
            Outcome(REJECTED, "400: the rows do not match the SGF") if e.game_id == "g-bad" else Outcome(DELIVERED)
        )
    )
    assert outbox.pending() == [] and outbox.counts.rejected == 1 and outbox.counts.delivered == 1
    (rejected,) = list((tmp_path / "rejected").iterdir())
    assert (rejected / "reason.txt").read_text() == "400: the rows do not match the SGF\n"
    assert (rejected / "game.sgf").read_bytes() == b"(;GM[1]GN[g-bad])"


def test_a_fatal_answer_stops_delivery_and_keeps_the_games(tmp_path):
    outbox = Outbox(tmp_path)
    put(outbox, "g-a")
    put(outbox, "g-b")
    tried = []
    outcome = outbox.deliver_due(lambda e: tried.append(e.game_id) or Outcome(FATAL, "token revoked"))
    assert outcome.kind == FATAL and tried == ["g-a"] and len(outbox.pending()) == 2


def test_http_answers_are_classified():
    assert outcome_of_status(201, "").kind == DELIVERED
    assert outcome_of_status(200, "already have it").kind == DELIVERED
    assert outcome_of_status(503, "down").kind == RETRY
    assert outcome_of_status(429, "slow down", "30").retry_after == 30.0
    assert outcome_of_status(429, "slow down", "soon").retry_after is None
    assert outcome_of_status(503, "maintenance", "Wed, 21 Oct 2015 07:28:00 GMT").retry_after == 0.0  # a date gone by
    assert outcome_of_status(401, "bad token").kind == FATAL
    assert "does not take this client" in outcome_of_status(426, "upgrade").message
    assert outcome_of_status(409, "game id taken").kind == REJECTED
    assert outcome_of_status(400, "bad rows").message == "400: bad rows"


def test_bad_input_and_damaged_entries(tmp_path):
    outbox = Outbox(tmp_path)
    with pytest.raises(ValueError, match="game kind 'match'"):
        outbox.put("match", "t", META, b"")
    with pytest.raises(ValueError, match="backoff"):
        Outbox(tmp_path, backoff_start=0)
    damaged = tmp_path / "pending" / "00000000000000000001-x"
    damaged.mkdir()
    (damaged / "entry.json").write_text("{not json")
    assert Outbox(tmp_path).pending() == []
    assert "could not be read" in (tmp_path / "rejected" / damaged.name / "reason.txt").read_text()


def test_a_killed_writer_leaves_whole_entries_only(tmp_path):
    """A process spooling games is killed with SIGKILL at a random moment: the next outbox sees only
    whole entries, and none of the half-built ones."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(os.getcwd())!r})
        from client.contribute.outbox import Outbox
        o = Outbox({str(tmp_path)!r})
        for k in range(100000):
            o.put("training", "t", {{"game_id": f"g-{{k}}"}}, b"(;GM[1])" * 50, b"rows" * 1000)
            if k == 20:
                print("ready", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.kill()
    proc.wait()
    entries = Outbox(tmp_path).pending()
    assert len(entries) > 20
    for e in entries:
        assert e.sgf.read_bytes() == b"(;GM[1])" * 50 and e.npz.read_bytes() == b"rows" * 1000
    assert not any((tmp_path / "tmp").iterdir())


def test_an_outbox_shared_by_processes_keeps_the_entries_others_are_writing(tmp_path):
    Outbox(tmp_path)
    busy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    try:
        (tmp_path / "tmp" / f"{busy.pid}.00000000000000000001-a").mkdir()
        (tmp_path / "tmp" / f"{gone.pid}.00000000000000000002-b").mkdir()
        Outbox(tmp_path)
        assert [p.name.split(".")[0] for p in (tmp_path / "tmp").iterdir()] == [str(busy.pid)]
    finally:
        busy.kill()
        busy.wait()
