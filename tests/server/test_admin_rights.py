"""Every admin action declares the right it needs: a staff account that may only view the lists
sees none of the actions and cannot run one by posting it; an account given the right can."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from tests.server.test_promotion import _candidate, _games, _settings

pytestmark = pytest.mark.django_db

# (list, action, the right that runs it)
ACTIONS = [
    ("networks/network", "force_accept", "networks.decide_network"),
    ("networks/network", "force_reject", "networks.decide_network"),
    ("networks/network", "force_roll_back", "networks.decide_network"),
    ("networks/network", "force_gate_again", "networks.decide_network"),
    ("networks/network", "force_confirm", "networks.decide_network"),
    ("networks/network", "force_release", "networks.release_network"),
    ("networks/network", "force_retire", "networks.release_network"),
    ("ratings/gating", "force_roll_back", "networks.decide_network"),
    ("ratings/gating", "force_gate_again", "networks.decide_network"),
    ("ratings/gating", "force_confirm", "networks.decide_network"),
    ("games/ratinggame", "disable", "games.change_ratinggame"),  # the self-play games' list shares its actions
    ("accounts/user", "quarantine_users", "audit.add_quarantine"),
    ("accounts/user", "lift_users", "audit.change_quarantine"),
    ("audit/auditscore", "quarantine_flagged", "audit.add_quarantine"),
    ("audit/quarantine", "lift_selected", "audit.change_quarantine"),
    ("accounts/clienttoken", "revoke", "accounts.change_clienttoken"),
]
VIEW = [
    "networks.view_network",
    "ratings.view_gating",
    "games.view_ratinggame",
    "games.view_traininggame",
    "accounts.view_user",
    "audit.view_auditscore",
    "audit.view_quarantine",
    "accounts.view_clienttoken",
]


def _staff(name: str, *rights: str):
    from server.accounts.models import User

    user = User.objects.create_user(name, f"{name}@example.org", "a long enough password", is_staff=True)
    for right in rights:
        app, codename = right.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=codename))
    client = Client()
    client.force_login(user)
    return user, client


@pytest.fixture
def world(run, alice, bob):
    """One of everything the actions act on: the id each action's post selects, by (list, action),
    or by list alone."""
    from server.accounts.models import ClientToken
    from server.audit.models import AuditScore, Quarantine
    from server.games.models import RatingGame
    from server.networks.models import Network
    from server.ratings.models import Gating
    from server.ratings.promotion import next_gating

    _settings(run, rule="fixed", fixed_games=4, fixed_wins=3)
    user = alice[0]
    random_net = run.networks.get(is_random=True)
    accepted = _candidate(run, "gen1", random_net)
    next_gating(run)
    _games(run, user, accepted, random_net, "BBB")  # three of four: accepted
    assert Network.objects.get(pk=accepted.pk).state == "accepted"
    Gating.objects.filter(candidate=accepted).update(in_doubt=True, doubt={"decision": "continue"})
    candidate = _candidate(run, "cand", accepted)
    next_gating(run)
    _games(run, user, candidate, accepted, "BW")
    score = AuditScore.objects.create(user=bob[0], run=run, network=candidate, verdict="flagged")
    quarantine = Quarantine.objects.create(user=user, reason="a test")
    return {
        "networks/network": candidate.pk,
        ("networks/network", "force_roll_back"): accepted.pk,
        ("networks/network", "force_confirm"): accepted.pk,
        "ratings/gating": candidate.pk,
        ("ratings/gating", "force_roll_back"): accepted.pk,
        ("ratings/gating", "force_confirm"): accepted.pk,
        "games/ratinggame": RatingGame.objects.first().pk,
        "accounts/user": user.pk,
        ("accounts/user", "quarantine_users"): bob[0].pk,
        "audit/auditscore": score.pk,
        "audit/quarantine": quarantine.pk,
        "accounts/clienttoken": ClientToken.objects.filter(user=user).first().pk,
    }


def _target(world: dict, path: str, action: str) -> int:
    return world.get((path, action), world[path])


def _state(run):
    """What the actions would change."""
    from server.accounts.models import ClientToken
    from server.audit.models import Quarantine
    from server.games.models import RatingGame
    from server.networks.models import Network
    from server.ratings.models import Gating, NetworkEvent

    return (
        sorted(Network.objects.values_list("name", "state", "released")),
        NetworkEvent.objects.count(),
        sorted(Gating.objects.values_list("candidate_id", "in_doubt")),
        sorted(RatingGame.objects.values_list("pk", "disabled")),
        sorted(Quarantine.objects.values_list("pk", "lifted_at")),
        sorted(ClientToken.objects.values_list("pk", "revoked_at")),
    )


@pytest.mark.parametrize(("path", "action", "right"), ACTIONS)
def test_a_view_only_staff_account_can_run_no_action(run, world, path, action, right):
    _, client = _staff("viewer", *VIEW)
    page = client.get(f"/admin/{path}/")
    assert page.status_code == 200
    assert f'value="{action}"' not in page.content.decode()
    before = _state(run)
    target = _target(world, path, action)
    response = client.post(f"/admin/{path}/", {"action": action, "_selected_action": [target], "note": "x"})
    assert response.status_code in (200, 302)
    assert _state(run) == before


@pytest.mark.parametrize(("path", "action", "right"), ACTIONS)
def test_the_right_lets_staff_see_and_run_the_action(run, world, path, action, right):
    _, client = _staff("keeper", *VIEW, right)
    assert f'value="{action}"' in client.get(f"/admin/{path}/").content.decode()
    before = _state(run)
    target = _target(world, path, action)
    response = client.post(f"/admin/{path}/", {"action": action, "_selected_action": [target], "note": "x"})
    assert response.status_code == 302
    assert _state(run) != before


def test_games_are_turned_off_only_through_the_actions(run, world):
    """The change form shows a game's fields read-only: turning it off redoes the counts, which only
    the actions do."""
    from server.games.models import RatingGame

    _, client = _staff("keeper", *VIEW, "games.change_ratinggame")
    pk = world["games/ratinggame"]
    client.post(f"/admin/games/ratinggame/{pk}/change/", {"disabled": "on"})
    assert not RatingGame.objects.get(pk=pk).disabled
