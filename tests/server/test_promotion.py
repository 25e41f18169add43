"""Gating and promotion in the database: a candidate's games are counted as they are stored, the run's
rule accepts or rejects it, an accepted network becomes the self-play network, a regression found
by later rating games is rolled back, and staff can decide by hand with a note; the API shows it all."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from tests.server import helpers
from tests.server.conftest import new_task

pytestmark = pytest.mark.django_db


def _settings(run, **gating):
    document = helpers.SETTINGS.to_dict()
    document["gating"].update(gating)
    run.set_settings(document)


def _candidate(run, name: str, parent, minutes_ago: int = 0):
    from server.networks.models import Network

    return Network.objects.create(
        name=name, run=run, parent=parent, created_at=timezone.now() - timedelta(minutes=minutes_ago)
    )


def _games(run, user, black, white, winners: str, counted: bool = True) -> None:
    """Rating games with these winners (B, W, 0 or -), each stored and counted as an upload is."""
    from server.distribution.models import Task
    from server.games.models import RatingGame
    from server.ratings.promotion import record_game

    task = Task.objects.create(
        kind=Task.Kind.RATING,
        run=run,
        user=user,
        network_a=black,
        network_b=white,
        settings_version=run.current_settings(),
        games=len(winners),
        client_version="0.1.0",
        client_instance_id="test",
        expires_at=timezone.now() + timedelta(hours=1),
    )
    for k, w in enumerate(winners):
        with transaction.atomic():
            game = RatingGame.objects.create(
                client_game_id=f"{task.id.hex}-{k}",
                task=task,
                user=user,
                run=run,
                settings_version=task.settings_version,
                board_x_size=7,
                board_y_size=7,
                komi=7.5,
                rules={},
                result={"B": "B+R", "W": "W+R", "0": "0"}.get(w, "Void"),
                winner=w,
                moves=40,
                sgf=f"games/{task.id.hex}-{k}.sgf",
                sgf_sha256="0" * 64,
                black_network=black,
                white_network=white,
            )
            if counted:
                record_game(game)


def test_a_candidate_that_passes_the_fixed_rule_becomes_the_selfplay_network(run, alice):
    from server.ratings.models import Gating, NetworkEvent

    _settings(run, rule="fixed", fixed_games=6, fixed_wins=4)
    user, client = alice
    random_net = run.networks.get(is_random=True)
    candidate = _candidate(run, "cand", random_net)
    assert new_task(client)["network"]["name"] == random_net.name
    assert {n["name"] for n in new_task(client, kinds=("rating",))["networks"]} == {"cand", random_net.name}
    _games(run, user, candidate, random_net, "BWB")  # as black: won, lost, won
    _games(run, user, random_net, candidate, "0")  # a draw is half a point: 2.5 of 4
    gating = Gating.objects.get(candidate=candidate)
    assert (gating.wins, gating.draws, gating.losses, gating.decision) == (2, 1, 1, "continue")
    _games(run, user, random_net, candidate, "W")  # 3.5 ...
    _games(run, user, random_net, candidate, "B")  # ... and 3.5 of 6 cannot reach 4
    gating.refresh_from_db()
    candidate.refresh_from_db()
    assert gating.decision == "reject" and candidate.state == "rejected" and gating.decided_at is not None
    assert "cannot reach" in gating.verdict["reason"] and gating.verdict["games"] == 6
    assert new_task(client)["network"]["name"] == random_net.name  # never handed out for self-play

    second = _candidate(run, "cand2", random_net)
    assert {n["name"] for n in new_task(client, kinds=("rating",))["networks"]} == {"cand2", random_net.name}
    _games(run, user, second, random_net, "BBBB")
    second.refresh_from_db()
    assert second.state == "accepted"
    assert new_task(client)["network"]["name"] == "cand2"
    kinds = list(NetworkEvent.objects.filter(network=second).values_list("kind", flat=True))
    assert kinds == ["gating_started", "accepted"]
    # Games between other networks, or after the verdict, change no gating.
    _games(run, user, second, random_net, "WWWW")
    assert Gating.objects.get(candidate=second).wins == 4

    detail = APIClient().get("/api/v1/networks/cand2/").json()
    assert detail["gating"]["decision"] == "accept" and detail["gating"]["opponent"] == random_net.name
    assert detail["gating"]["verdict"]["reason"].startswith("4 points of 4 games")
    assert [e["kind"] for e in detail["events"]] == ["gating_started", "accepted"]


def test_the_sprt_rejects_a_candidate_that_loses(run, alice):
    from server.ratings.models import Gating

    _settings(run, rule="sprt", sprt_max_games=100)
    user, client = alice
    random_net = run.networks.get(is_random=True)
    weak = _candidate(run, "weak", random_net)
    new_task(client, kinds=("rating",))
    for _ in range(20):
        _games(run, user, weak, random_net, "W")  # loses as black ...
        _games(run, user, random_net, weak, "B")  # ... and as white
        weak.refresh_from_db()
        if weak.state != "rating":
            break
    gating = Gating.objects.get(candidate=weak)
    assert weak.state == "rejected" and gating.rule == "sprt" and gating.verdict["llr"] <= gating.verdict["lower"]
    assert gating.losses + gating.wins < 40


def test_an_accepted_network_found_worse_is_rolled_back(run, alice):
    from server.networks.models import Network
    from server.networks.selectors import strongest
    from server.ratings.models import NetworkEvent
    from server.ratings.services import refit

    _settings(run, rule="fixed", fixed_games=4, fixed_wins=3, rollback_confidence=0.95, strongest_min_games=3)
    user, client = alice
    run.networks.filter(is_random=True).update(created_at=timezone.now() - timedelta(days=1))
    random_net = run.networks.get(is_random=True)
    first = _candidate(run, "gen1", random_net, minutes_ago=10)
    new_task(client, kinds=("rating",))
    _games(run, user, first, random_net, "BBBB" * 10)
    second = _candidate(run, "gen2", first, minutes_ago=5)
    new_task(client, kinds=("rating",))
    _games(run, user, second, first, "BBB")  # a lucky start: accepted
    assert Network.objects.get(name="gen2").state == "accepted"
    assert new_task(client)["network"]["name"] == "gen2"
    for k, name in enumerate(("gen1", "gen2"), start=1):  # files, to be offered as the strongest
        Network.objects.filter(name=name).update(file=f"networks/{k:064x}.safetensors", sha256=f"{k:064x}")
    refit(run)
    assert strongest(run).name == "gen2"  # 3 wins of 3 against gen1
    # Continued rating games say otherwise: gen2 loses most of its games against gen1.
    _games(run, user, second, first, "WWWWWWWWWWWWWWWWWWWB" * 2)
    _games(run, user, first, second, "BBBBBBBBBBBBBBBBBBBW" * 2)
    refit(run)
    assert Network.objects.get(name="gen2").state == "rejected"
    assert new_task(client)["network"]["name"] == "gen1"
    assert strongest(run).name == "gen1"  # a rolled-back network is no longer offered
    event = NetworkEvent.objects.get(network=second, kind="rolled_back")
    assert event.data["predecessor"] == "gen1" and event.data["z"] < -1.645
    refit(run)  # gen1 against the random network is no regression: nothing more happens
    assert Network.objects.get(name="gen1").state == "accepted"


def test_staff_decide_by_hand_from_the_admin_with_a_note(run, client):
    from server.accounts.models import User
    from server.networks.models import Network
    from server.ratings.models import Gating, NetworkEvent

    admin = User.objects.create_superuser("boss", "boss@example.org", "a long enough password")
    client.force_login(admin)
    random_net = run.networks.get(is_random=True)
    candidate = _candidate(run, "forced", random_net)
    from server.ratings.promotion import next_gating

    assert next_gating(run).candidate == candidate
    response = client.post(
        "/admin/networks/network/",
        {"action": "force_accept", "_selected_action": [candidate.pk], "note": "strong in our own tests", "index": 0},
    )
    assert response.status_code == 302
    candidate.refresh_from_db()
    assert candidate.state == "accepted" and Gating.objects.get(candidate=candidate).decision == "accept"
    event = NetworkEvent.objects.get(network=candidate, kind="forced_accept")
    assert (event.user, event.note) == (admin, "strong in our own tests")
    client.post(
        "/admin/networks/network/",
        {"action": "force_release", "_selected_action": [candidate.pk], "note": "", "index": 0},
    )
    assert Network.objects.get(pk=candidate.pk).released
    client.post(
        "/admin/networks/network/",
        {"action": "force_retire", "_selected_action": [candidate.pk], "note": "superseded", "index": 0},
    )
    assert Network.objects.get(pk=candidate.pk).state == "retired"
    assert list(NetworkEvent.objects.filter(network=candidate).values_list("kind", flat=True)) == [
        "gating_started",
        "forced_accept",
        "released",
        "retired",
    ]


@pytest.mark.kernels
def test_an_uploaded_rating_game_counts_into_the_gating(run, alice, tmp_path):
    from server.ratings.models import Gating
    from tests.server.test_games import RATING, post

    _, client = alice
    random_net = run.networks.get(is_random=True)
    _candidate(run, "test-net1", random_net)
    task = new_task(client, kinds=("rating",))
    game = helpers.rating_games(tmp_path, "test-net1", helpers.RANDOM_NET, count=1)[0]
    response = post(client, RATING, helpers.upload_fields(task["id"], game))
    assert response.status_code == 201, response.content
    gating = Gating.objects.get(candidate__name="test-net1")
    assert gating.wins + gating.draws + gating.losses == 1
    assert post(client, RATING, helpers.upload_fields(task["id"], game)).status_code == 200  # a retry: not twice
    gating.refresh_from_db()
    assert gating.wins + gating.draws + gating.losses == 1


def test_a_gating_whose_opponent_falls_starts_again_against_the_accepted_network(run, alice):
    from server.networks.models import Network
    from server.ratings.models import Gating, NetworkEvent
    from server.ratings.promotion import next_gating, staff_decision

    user, _ = alice
    run.networks.filter(is_random=True).update(created_at=timezone.now() - timedelta(days=1))
    random_net = run.networks.get(is_random=True)
    first = _candidate(run, "first", random_net, minutes_ago=10)
    staff_decision(first, "accept", note="by hand")
    challenger = _candidate(run, "challenger", first, minutes_ago=5)
    assert next_gating(run).opponent == first
    _games(run, user, challenger, first, "BW")
    staff_decision(Network.objects.get(name="first"), "retire", note="a bug in its export")
    gating = next_gating(run)
    assert gating.candidate == challenger and gating.opponent == random_net
    assert (gating.wins, gating.losses) == (0, 0)
    assert NetworkEvent.objects.filter(network=challenger, note__contains="started again").exists()
    _games(run, user, challenger, random_net, "B")
    assert Gating.objects.get(candidate=challenger).wins == 1


def test_parentless_and_staff_accepted_networks_are_rated_and_not_second_guessed(run, alice):
    from django.core.management import CommandError, call_command

    from server.networks.models import Network
    from server.ratings.models import Rating
    from server.ratings.promotion import staff_decision
    from server.ratings.services import refit

    user, _ = alice
    run.networks.filter(is_random=True).update(created_at=timezone.now() - timedelta(days=1))
    random_net = run.networks.get(is_random=True)
    orphan = _candidate(run, "orphan", None)  # no parent: the prior ties it to the random network
    staff_decision(orphan, "accept", note="imported from elsewhere")
    _games(run, user, orphan, random_net, "B" * 30, counted=False)  # won every game
    _games(run, user, random_net, orphan, "W" * 30, counted=False)
    refit(run)
    assert 200 < Rating.objects.get(network=orphan).elo < 2000
    # Staff accepted it: however its games go, no rollback overrides that.
    _games(run, user, orphan, random_net, "W" * 200, counted=False)
    refit(run)
    assert Network.objects.get(name="orphan").state == "accepted"
    # Without any prior a clean sweep has no finite rating: the refit says so and stores nothing.
    _settings(run, virtual_draws=0.0)
    sweeper = _candidate(run, "sweeper", random_net)
    _games(run, user, sweeper, random_net, "B" * 10, counted=False)
    with pytest.raises(CommandError, match="cannot be refitted: the fit did not converge"):
        call_command("rate", "--run", run.name)


# --- the rule none: every network accepted as it arrives ------------------------------------------------------
def test_under_the_rule_none_a_stored_network_is_accepted_at_once(run, trainer, alice, client):
    from server.networks.models import Network
    from server.platform.experiment import generations
    from server.platform.status import run_status
    from server.ratings.models import Gating, NetworkEvent
    from server.ratings.promotion import gating_waits, next_gating
    from server.ratings.scheduling import choose_pair

    _settings(run, rule="none")
    _, uploader = trainer
    _, volunteer = alice
    random_net = run.networks.get(is_random=True)
    for name in ("net-1", "net-2"):
        response = helpers.upload_network(uploader, name, helpers.network_file(name))
        assert response.status_code == 201, response.content
        assert response.json()["state"] == "accepted"
        assert run.selfplay_network().name == name
        assert new_task(volunteer)["network"]["name"] == name
    first, second = Network.objects.get(name="net-1"), Network.objects.get(name="net-2")
    # Each replaced the self-play network of its moment, on a record decided at once.
    for network, replaced in ((first, random_net), (second, first)):
        gating = Gating.objects.get(candidate=network)
        assert (gating.rule, gating.decision, gating.opponent, gating.wins + gating.draws + gating.losses) == (
            "none",
            "accept",
            replaced,
            0,
        )
        (event,) = NetworkEvent.objects.filter(network=network)
        assert event.kind == "accepted" and "gates no network" in event.note
    assert not gating_waits(run) and next_gating(run) is None
    # Rating games are played between accepted networks, for the ratings and the rollback.
    assert set(choose_pair(run)) <= {random_net, first, second}
    assert {n["name"] for n in new_task(volunteer, kinds=("rating",))["networks"]} <= {
        "net-1",
        "net-2",
        random_net.name,
    }
    # What the site, the API and the reports say.
    detail = APIClient().get("/api/v1/networks/net-2/").json()
    assert detail["state"] == "accepted" and detail["gating"]["rule"] == "none"
    assert detail["gating"]["opponent"] == "net-1" and [e["kind"] for e in detail["events"]] == ["accepted"]
    page = client.get("/networks/net-2/").content.decode()
    assert "Not gated: the run gates no network" in page and 'href="/networks/net-1/"' in page
    assert [g.name for g in generations(run)] == [random_net.name, "net-1", "net-2"]
    assert "network net-2 · 2 accepted, 0 waiting" in run_status(run) and "gating net-" not in run_status(run)


def test_a_run_switched_to_the_rule_none_accepts_its_waiting_networks_in_order(run, alice):
    from server.networks.models import Network
    from server.ratings.models import Gating, NetworkEvent
    from server.ratings.promotion import next_gating, recount, staff_decision

    _settings(run, rule="fixed", fixed_games=20, fixed_wins=10)
    user, _ = alice
    run.networks.filter(is_random=True).update(created_at=timezone.now() - timedelta(days=1))
    random_net = run.networks.get(is_random=True)
    playing = _candidate(run, "playing", random_net, minutes_ago=10)
    assert next_gating(run).candidate == playing
    _games(run, user, playing, random_net, "BW0")
    waiting = _candidate(run, "waiting", playing, minutes_ago=5)
    assert Network.objects.get(name="waiting").state == "candidate"

    _settings(run, rule="none")  # both settled in the transaction that changes the settings
    playing.refresh_from_db()
    waiting.refresh_from_db()
    assert playing.state == waiting.state == "accepted" and run.selfplay_network() == waiting
    closed = Gating.objects.get(candidate=playing)
    assert (closed.rule, closed.decision, closed.opponent) == ("none", "accept", random_net)
    assert (closed.wins, closed.draws, closed.losses) == (1, 1, 1)  # its games stay on its record
    assert closed.verdict["reason"].endswith("its gating closed after 3 games")
    assert Gating.objects.get(candidate=waiting).opponent == playing  # accepted in order: each replaced the last
    assert list(NetworkEvent.objects.filter(network=playing).values_list("kind", flat=True)) == [
        "gating_started",
        "accepted",
    ]
    assert recount(run) == [] and not Gating.objects.filter(in_doubt=True).exists()  # no games decided them

    # A network added past the upload (here straight into the database) is accepted when rating games
    # are next handed out.
    late = _candidate(run, "late", waiting)
    assert next_gating(run) is None
    late.refresh_from_db()
    assert late.state == "accepted" and Gating.objects.get(candidate=late).opponent == waiting

    # Sending a network back to gating means nothing here: staff are told so, and nothing changes.
    with pytest.raises(ValueError, match=r"gates no network .*roll it back or reject it instead"):
        staff_decision(late, "gate_again", note="play it again")
    assert Network.objects.get(name="late").state == "accepted" and Gating.objects.filter(candidate=late).exists()
    staff_decision(late, "roll_back", note="a bug in its export")
    assert run.selfplay_network() == waiting


def test_under_the_rule_none_a_worse_network_is_rolled_back_against_the_one_it_replaced(run, alice):
    from server.ratings.models import NetworkEvent
    from server.ratings.promotion import check_rollback, gating_settings, next_gating
    from server.ratings.services import fit_run, refit

    _settings(run, rule="none", rollback_confidence=0.95)
    user, client = alice
    run.networks.filter(is_random=True).update(created_at=timezone.now() - timedelta(days=1))
    random_net = run.networks.get(is_random=True)

    def arrives(name: str, parent, minutes_ago: int):
        network = _candidate(run, name, parent, minutes_ago=minutes_ago)
        next_gating(run)
        network.refresh_from_db()
        assert network.state == "accepted" and run.selfplay_network() == network
        return network

    gen1 = arrives("gen1", random_net, 30)
    _games(run, user, gen1, random_net, "B" * 20)
    _games(run, user, random_net, gen1, "W" * 20)
    gen2 = arrives("gen2", gen1, 20)
    _games(run, user, gen2, gen1, "WWWWWWWWWWWWWWWWWWWB" * 2)  # gen2 loses most of its games to gen1
    _games(run, user, gen1, gen2, "BBBBBBBBBBBBBBBBBBBW" * 2)
    # A fit that began before gen3 was accepted does not roll back gen2, which is no longer the newest.
    networks, fit, _, _ = fit_run(run, gating_settings(run))
    gen3 = arrives("gen3", gen2, 10)
    assert check_rollback(run, networks, fit) is None
    assert gen2.events.filter(kind="rolled_back").count() == 0
    refit(run)  # gen3 has played no games against gen2 yet: nothing to test
    assert run.selfplay_network() == gen3
    _games(run, user, gen3, gen2, "W" * 40)
    _games(run, user, gen2, gen3, "B" * 40)
    refit(run)  # gen3 is worse than gen2, the network it replaced: gen2 plays again
    assert run.selfplay_network() == gen2 and new_task(client)["network"]["name"] == "gen2"
    assert NetworkEvent.objects.get(network=gen3, kind="rolled_back").data["predecessor"] == "gen2"
    refit(run)  # now gen2 is the newest, and worse than gen1: gen1 plays again
    assert run.selfplay_network() == gen1
    event = NetworkEvent.objects.get(network=gen2, kind="rolled_back")
    assert event.data["predecessor"] == "gen1" and event.data["z"] < -1.96
    refit(run)  # gen1 is better than the random network: it stays
    assert run.selfplay_network() == gen1
