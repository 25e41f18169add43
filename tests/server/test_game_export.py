"""The filtered export of a run's games: what each filter selects, the archives' contents, bad
parameters refused by name, a streamed export of many games in flat memory (measured), and what
keeps exports from tying the server up: how many run at once, their send deadline, and the size of
an anonymous one."""

from __future__ import annotations

import io
import re
import socket
import tarfile
import threading
import time
import tracemalloc
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from server.operations import admission
from server.operations.archives import STREAM_CHUNK
from server.operations.sending import DeadlinePassed, WithinDeadline
from tests.server import helpers

pytestmark = pytest.mark.django_db


def _body(response) -> bytes:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


@pytest.fixture
def stored(run, alice, selfplay_games):
    """Four self-play games (two 7x7 area games won by black, komi 7; a territory game won by white
    on 9x9, komi 6.5, a day ago; one disabled) and two rating games."""
    from server.games.models import TrainingGame

    user, _ = alice
    games = helpers.store_training_games(run, user, selfplay_games[:4])
    area = {"ko": "SIMPLE", "scoring": "AREA"}
    TrainingGame.objects.filter(pk__in=[games[0].pk, games[1].pk]).update(
        rules=area, winner="B", komi=7.0, board_x_size=7, board_y_size=7
    )
    TrainingGame.objects.filter(pk=games[2].pk).update(
        rules={"ko": "POSITIONAL", "scoring": "TERRITORY"},
        winner="W",
        resigned=True,
        komi=6.5,
        board_x_size=9,
        board_y_size=9,
        created_at=timezone.now() - timedelta(days=1),
    )
    TrainingGame.objects.filter(pk=games[3].pk).update(disabled=True)
    random_net = run.networks.get(is_random=True)
    rating = helpers.store_rating_games(run, user, random_net, random_net, selfplay_games[0].sgf, 2)
    return [TrainingGame.objects.get(pk=g.pk) for g in games], rating


def _names(body: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as archive:
        return sorted(archive.getnames())


def test_the_sgf_archive_holds_the_selected_games(stored, run):
    games, rating = stored
    web = Client()
    everything = _names(_body(web.get("/api/v1/games/export/")))
    expected = [f"training/{g.client_game_id}.sgf" for g in games[:3]] + [
        f"rating/{g.client_game_id}.sgf" for g in rating
    ]
    assert everything == sorted(expected)  # the disabled game left out
    response = web.get("/api/v1/games/export/?games=training&scoring=area")
    assert response["Content-Type"] == "application/gzip" and ".tar.gz" in response["Content-Disposition"]
    body = _body(response)
    assert _names(body) == sorted(f"training/{g.client_game_id}.sgf" for g in games[:2])
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as archive:
        member = archive.extractfile(f"training/{games[0].client_game_id}.sgf")
        assert member.read() == games[0].sgf.open("rb").read()
    for query, chosen in [
        ("size=9", [games[2]]),
        ("winner=W&resigned=true", [games[2]]),
        ("komi=6.5", [games[2]]),
        ("komi_min=6.6&komi_max=7", games[:2]),
        ("ko=positional", [games[2]]),
        (f"until={(timezone.now() - timedelta(days=1)).date()}", [games[2]]),
        (f"since={timezone.now().date()}", games[:2]),
        (f"network={run.name}-random", games[:3]),
    ]:
        names = _names(_body(web.get(f"/api/v1/games/export/?games=training&{query}")))
        assert names == sorted(f"training/{g.client_game_id}.sgf" for g in chosen), query
    # Rating games by either side's network, with the same filters (they are 7x7, komi 7.5, won by white).
    both = _names(_body(web.get(f"/api/v1/games/export/?network={run.name}-random&size=7&winner=W")))
    assert both == sorted(f"rating/{g.client_game_id}.sgf" for g in rating)


def test_the_npz_archive_holds_the_rows(stored):
    games, _ = stored
    response = Client().get("/api/v1/games/export/?kind=npz&scoring=territory")
    assert response["Content-Type"] == "application/x-tar"
    with tarfile.open(fileobj=io.BytesIO(_body(response))) as archive:
        (member,) = archive.getmembers()
        assert member.name == f"{games[2].client_game_id}.npz"
        assert archive.extractfile(member).read() == games[2].npz.open("rb").read()


def test_the_npz_archive_reads_packed_games_from_their_shards(stored, run):
    """Once packed, a game's rows are read from its shard: its own file may be gone."""
    from django.core.files.storage import default_storage

    from server.games.shards import pack_due

    games, _ = stored
    rows = {g.client_game_id: g.npz.open("rb").read() for g in games[:3]}
    assert pack_due(run, force=True)
    for game in games:
        default_storage.delete(game.npz.name)
    with tarfile.open(fileobj=io.BytesIO(_body(Client().get("/api/v1/games/export/?kind=npz")))) as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive.getmembers()}
    assert members == {f"{game_id}.npz": data for game_id, data in rows.items()}


@pytest.mark.parametrize(
    ("query", "field", "words"),
    [
        ("kind=csv", "kind", "expected one of sgf, npz"),
        ("games=some", "games", "expected one of training, rating, all"),
        ("kind=npz&games=rating", "games", "no training rows"),
        ("since=yesterday", "since", "since='yesterday'"),
        ("scoring=japanese", "scoring", "scoring='japanese'"),
        ("komi=seven", "komi", "komi='seven'"),
        ("winner=X", "winner", "winner='X'"),
        ("network=nope", "network", "has no network named 'nope'"),
    ],
)
def test_bad_parameters_are_refused_by_name(stored, query, field, words):
    response = Client().get(f"/api/v1/games/export/?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == field and words in error["message"], error


def test_an_unknown_run_is_not_found(stored):
    response = Client().get("/api/v1/games/export/?run=nope")
    assert response.status_code == 404 and response.json()["error"]["field"] == "run"


def _many(run, template, count: int, prefix: str) -> None:
    """count more self-play games, every one pointing at the template's stored files."""
    from server.games.models import TrainingGame

    fields = {
        f.attname: getattr(template, f.attname)
        for f in TrainingGame._meta.concrete_fields
        if f.attname not in ("id", "client_game_id")
    }
    TrainingGame.objects.bulk_create(
        [TrainingGame(client_game_id=f"{prefix}-{k}", **fields) for k in range(count)], batch_size=1000
    )


def _peak_while_streaming(url: str) -> tuple[int, int]:
    """(the most memory Python held while the answer was read, the answer's bytes)."""
    response = Client().get(url)
    assert response.status_code == 200
    size = 0
    tracemalloc.start()
    try:
        for chunk in response.streaming_content:
            size += len(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, size


def test_a_big_export_streams_in_flat_memory(run, alice, selfplay_games, capsys, settings):
    """Four times the games, the same memory: the export never holds the selection or the archive
    (the figures are printed: pytest -s shows them)."""
    settings.SENTE_EXPORTS = {**settings.SENTE_EXPORTS, "anonymous_games": 10_000}
    user, _ = alice
    (template,) = helpers.store_training_games(run, user, selfplay_games[:1])
    _many(run, template, 2399, "first")
    figures = {}
    for kind in ("npz", "sgf"):
        figures[kind, 2400] = _peak_while_streaming(f"/api/v1/games/export/?kind={kind}")
    _many(run, template, 3 * 2400, "more")
    for kind in ("npz", "sgf"):
        figures[kind, 9600] = _peak_while_streaming(f"/api/v1/games/export/?kind={kind}")
    with capsys.disabled():
        for (kind, games), (peak, size) in figures.items():
            print(f"\nexport of {games} games ({kind}): {size / 1e6:.1f} MB streamed, peak {peak / 1e6:.2f} MB held")
    for kind in ("npz", "sgf"):
        (small, small_bytes), (big, big_bytes) = figures[kind, 2400], figures[kind, 9600]
        # at most the bytes gathered before they go out more (all of the tiny SGF archive here)
        assert big_bytes > 3.5 * small_bytes and big < small + STREAM_CHUNK, kind
    (small, _), (big, big_bytes) = figures["npz", 2400], figures["npz", 9600]
    assert big < 1.15 * small and big < big_bytes / 10


def test_the_data_pages_form_asks_for_the_same(stored, run):
    """The form on /data/ sends every field, the empty ones empty: they select nothing away."""
    _, rating = stored
    page = Client().get("/data/").content.decode()
    assert 'action="/api/v1/games/export/"' in page
    fields = re.findall(r'name="([a-z_]+)"', page.split('id="export"')[1])
    assert set(fields) == {
        "run",
        "kind",
        "games",
        "network",
        "since",
        "until",
        "size",
        "scoring",
        "ko",
        "komi_min",
        "komi_max",
        "winner",
    }
    query = "&".join(f"{f}=" for f in fields if f not in ("run", "kind", "games"))
    body = _body(Client().get(f"/api/v1/games/export/?run={run.name}&kind=sgf&games=all&{query}"))
    assert len(_names(body)) == 3 + len(rating)


# --- what an export may cost ------------------------------------------------------------------------
@pytest.fixture
def limits(settings):
    """The export limits of the settings, to change in a test (restored after it)."""
    settings.SENTE_EXPORTS = {**settings.SENTE_EXPORTS}
    return settings.SENTE_EXPORTS


def _refused(response, status: int) -> str:
    assert response.status_code == status, response.content
    assert response["Retry-After"] == str(admission.RETRY_AFTER_SECONDS)
    error = response.json()["error"]
    assert error["code"] == "busy" and error["retry_after"] == admission.RETRY_AFTER_SECONDS, error
    return error["message"]


def test_an_anonymous_export_of_many_games_is_refused_and_a_signed_in_one_served(stored, alice, limits):
    limits["anonymous_games"] = 2
    response = Client().get("/api/v1/games/export/")  # 3 self-play and 2 rating games
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "too_many_games" and "more than 2 games" in error["message"], error
    assert "sign in" in error["message"] and "/api/v1/exports/" in error["message"]
    assert len(_names(_body(Client().get("/api/v1/games/export/?games=training&scoring=area")))) == 2
    _, signed_in = alice
    assert len(_names(_body(signed_in.get("/api/v1/games/export/")))) == 5


def test_exports_at_once_are_capped_per_address_and_across_the_site(stored, limits):
    limits.update(per_address=1, at_once=2, per_process=10)
    first = Client(REMOTE_ADDR="10.0.0.1").get("/api/v1/games/export/")
    assert first.status_code == 200  # streaming, not read yet: it holds its slots
    message = _refused(Client(REMOTE_ADDR="10.0.0.1").get("/api/v1/games/export/"), 429)
    assert "your address (10.0.0.1) has 1 export under way" in message
    second = Client(REMOTE_ADDR="10.0.0.2").get("/api/v1/games/export/")
    assert second.status_code == 200
    message = _refused(Client(REMOTE_ADDR="10.0.0.3").get("/api/v1/games/export/"), 503)
    assert "2 exports are under way" in message and "/api/v1/exports/" in message
    assert len(_names(_body(first))) == 5  # read to its end: its slots go back
    third = Client(REMOTE_ADDR="10.0.0.3").get("/api/v1/games/export/")
    assert len(_names(_body(third))) == len(_names(_body(second))) == 5
    assert len(_names(_body(Client(REMOTE_ADDR="10.0.0.1").get("/api/v1/games/export/")))) == 5


def test_an_ipv6_network_counts_as_one_address_for_exports(stored, limits):
    """The per-address count takes an IPv6 address's /64 (a machine picks any address in it): a
    second address of it is refused while the first exports, another /64 is not; an IPv4 address and
    its IPv4-mapped form are one address."""
    limits.update(per_address=1, at_once=5, per_process=10)
    first = Client(REMOTE_ADDR="2001:db8:4:4::1").get("/api/v1/games/export/")
    assert first.status_code == 200
    message = _refused(Client(REMOTE_ADDR="2001:db8:4:4:abcd::9").get("/api/v1/games/export/"), 429)
    assert "your address (2001:db8:4:4::/64) has 1 export under way" in message
    other = Client(REMOTE_ADDR="2001:db8:4:5::1").get("/api/v1/games/export/")
    assert other.status_code == 200
    v4 = Client(REMOTE_ADDR="198.51.100.4").get("/api/v1/games/export/")
    assert v4.status_code == 200
    _refused(Client(REMOTE_ADDR="::ffff:198.51.100.4").get("/api/v1/games/export/"), 429)
    for response in (first, other, v4):
        assert len(_names(_body(response))) == 5


def test_a_process_keeps_a_thread_free_of_exports(stored, limits):
    limits.update(per_address=5, at_once=5, per_process=1)
    first = Client(REMOTE_ADDR="10.0.0.1").get("/api/v1/games/export/")
    assert first.status_code == 200
    message = _refused(Client(REMOTE_ADDR="10.0.0.2").get("/api/v1/games/export/"), 503)
    assert "as many exports as it may at once" in message
    _body(first)
    assert len(_names(_body(Client(REMOTE_ADDR="10.0.0.2").get("/api/v1/games/export/")))) == 5


def test_the_slot_of_a_process_that_died_comes_back_when_its_lease_ends(limits, monkeypatch):
    limits.update(per_address=1, at_once=1, per_process=10, seconds=1)
    monkeypatch.setattr(admission, "LEASE_MARGIN_SECONDS", 0)  # a lease of one second
    dead = admission.admit("10.0.0.1")
    assert isinstance(dead, admission.Admission)
    assert isinstance(admission.admit("10.0.0.2"), admission.Refusal)
    time.sleep(1.5)  # its process died: nobody gives the slot back, its lease ends
    alive = admission.admit("10.0.0.2")
    assert isinstance(alive, admission.Admission)
    dead.release()  # late: it must not give back the slot that is now the other's
    assert isinstance(admission.admit("10.0.0.3"), admission.Refusal)
    alive.release()
    late = admission.admit("10.0.0.3")
    assert isinstance(late, admission.Admission)
    late.release()


def test_an_export_not_sent_within_its_deadline_is_cut_off_and_gives_its_slots_back(stored, limits):
    limits.update(seconds=0)
    response = Client().get("/api/v1/games/export/")
    assert response.status_code == 200
    with pytest.raises(DeadlinePassed, match="was not sent within 0 s"):
        _body(response)
    limits.update(seconds=600)
    assert len(_names(_body(Client().get("/api/v1/games/export/")))) == 5


def test_a_reader_who_takes_nothing_fails_the_write_at_the_deadline():
    """As gunicorn writes an answer: each piece with sendall, on the socket the WSGI environ names.
    The reader never reads; the write fails once the deadline has passed, and the answer is closed."""
    server, reader = socket.socketpair()
    closed = threading.Event()
    pieces = iter([b"x" * (1 << 20)] * 64)  # more than any socket buffer
    body = WithinDeadline(
        pieces, 1.0, {"gunicorn.socket": server, "SERVER_PROTOCOL": "HTTP/1.1"}, "the test's answer", closed.set
    )
    start = time.monotonic()
    try:
        with pytest.raises(TimeoutError):
            for piece in body:
                server.sendall(piece)
        assert time.monotonic() - start >= 0.9  # not before it
    finally:
        body.close()
        server.close()
        reader.close()
    assert closed.is_set()
