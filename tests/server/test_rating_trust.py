"""Rating games from many hands: no account decides a gating or moves the ratings alone, a
quarantined account gets no rating task, games that stop counting are counted out again (a decision
taken on them is put in doubt, one staff action from undone), and the audit flags an account whose
rating results differ from everyone else's on the same pairs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tests.server import helpers
from tests.server.conftest import new_task
from tests.server.test_promotion import _candidate, _games, _settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def immediate_tasks(settings):
    """Background tasks run when their transaction commits, in the test's process."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}


def _accounts(*names: str):
    """Accounts that play rating games (signed in through a client token each)."""
    from server.accounts.models import ClientToken, User

    made = []
    for name in names:
        user = User.objects.create_user(name, f"{name}@example.org", "a long enough password")
        _, key = ClientToken.issue(user, f"{name}'s machine")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        made.append((user, client))
    return made


def _gating(run, candidate):
    """The candidate's gating, begun as a rating task request begins it."""
    from server.ratings.models import Gating
    from server.ratings.promotion import next_gating

    assert next_gating(run).candidate == candidate
    return Gating.objects.get(candidate=candidate)


# --- the cap -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("games", "share", "cap"),
    [
        ([], 0.25, 0),
        ([200], 0.25, 0),  # one account alone counts for nothing
        ([16, 16, 16], 0.25, 0),  # nor three
        ([16, 16, 16, 16], 0.25, 16),  # four equal ones count whole
        ([100, 10, 10, 10], 0.25, 10),  # a large one counts as much as the others
        ([100, 30, 30, 30, 30], 0.25, 40),
        ([10, 4], 0.5, 4),
        ([63, 63, 54], 0.35, 63),  # 0.35 * 180 is 62.99999999999999 in floats, not 63
        ([7, 3], 1.0, 7),  # a share of 1: no cap
    ],
)
def test_the_cap_is_where_no_account_holds_more_than_its_share(games, share, cap):
    from server.ratings.tally import account_cap

    assert account_cap(games, share) == cap
    counted = [min(n, cap) for n in games]
    if cap:
        assert max(counted) <= share * sum(counted) + 1e-9
        assert cap + 1 > share * sum(min(n, cap + 1) for n in games) or cap == max(games)  # the largest such


def test_one_accounts_forged_games_cannot_accept_or_reject_a_candidate(run):
    """With the default share of a quarter, 200 wins from one account (the whole fixed rule's games)
    count for nothing, and neither do 200 losses; once four accounts play, each counts alike."""
    from server.ratings.models import Gating

    _settings(run, rule="fixed", fixed_games=200, fixed_wins=100, account_share=0.25)
    (mallory, _), (trudy, _), *honest = _accounts("mallory", "trudy", "ann", "ben", "cat")
    random_net = run.networks.get(is_random=True)
    candidate = _candidate(run, "cand", random_net)
    _gating(run, candidate)
    _games(run, mallory, candidate, random_net, "B" * 200)  # every game the candidate's
    gating = Gating.objects.get(candidate=candidate)
    assert gating.decision == "continue" and (gating.wins, gating.losses) == (0, 0)
    assert gating.tally["capped"] == 200 and gating.tally["accounts"] == 0
    _games(run, trudy, candidate, random_net, "W" * 200)  # or none of them
    gating.refresh_from_db()
    candidate.refresh_from_db()
    assert gating.decision == "continue" and candidate.state == "rating"
    # Three honest accounts join: five accounts, the forgers' games capped at the others' level.
    for user, _ in honest:
        _games(run, user, candidate, random_net, "BW" * 8)
    gating.refresh_from_db()
    # The cap: 24 games, where 24 <= (24 + 24 + 3 * 16) / 4; the honest games all count.
    assert gating.tally["cap"] == 24 and gating.tally["accounts"] == 5
    assert (gating.wins, gating.losses) == (24 + 24, 24 + 24) and gating.decision == "continue"


@pytest.mark.kernels
def test_an_uploaded_forgery_of_one_account_decides_nothing(run, tmp_path):
    """Through the API: one account's rating games of a small fixed rule (2 points of 2 games) leave
    the gating open; they are kept, and the task counts them."""
    from server.games.models import RatingGame
    from server.ratings.models import Gating

    _settings(run, rule="fixed", fixed_games=2, fixed_wins=1, account_share=0.25, rating_game_prob=1.0)
    ((user, client),) = _accounts("mallory")
    random_net = run.networks.get(is_random=True)
    candidate = _candidate(run, "test-net1", random_net)
    task = new_task(client, kinds=("rating",))
    for game in helpers.rating_games(tmp_path, candidate.name, random_net.name, count=2):
        fields = helpers.upload_fields(task["id"], game, settings_version=2)
        assert client.post("/api/v1/games/rating/", fields, format="multipart").status_code == 201
    gating = Gating.objects.get(candidate=candidate)
    assert RatingGame.objects.filter(user=user).count() == 2
    assert gating.decision == "continue" and gating.tally["played"] == 2 and gating.tally["capped"] == 2


def test_a_decision_needs_many_hands_and_then_comes(run):
    from server.ratings.models import Gating

    _settings(run, rule="fixed", fixed_games=40, fixed_wins=20, account_share=0.25)
    accounts = _accounts("ann", "ben", "cat", "dan")
    random_net = run.networks.get(is_random=True)
    candidate = _candidate(run, "cand", random_net)
    _gating(run, candidate)
    for user, _ in accounts[:3]:
        _games(run, user, candidate, random_net, "B" * 10)
    assert Gating.objects.get(candidate=candidate).decision == "continue"  # three hands: nothing counts
    _games(run, accounts[3][0], candidate, random_net, "B" * 5 + "W" * 5)
    gating = Gating.objects.get(candidate=candidate)
    candidate.refresh_from_db()
    assert gating.decision == "accept" and candidate.state == "accepted" and gating.wins >= 20


# --- who gets rating tasks -------------------------------------------------------------------------
def test_a_quarantined_account_gets_no_rating_task(run):
    from server.audit.services import lift, quarantine

    _settings(run, rating_game_prob=1.0)
    (user, client), (_, other) = _accounts("mallory", "ann")
    random_net = run.networks.get(is_random=True)
    _candidate(run, "cand", random_net)
    assert new_task(other, kinds=("selfplay", "rating"))["kind"] == "rating"
    quarantine(user, None, "flagged by the audit")
    for _ in range(5):  # every request would be a rating task: this account's are self-play
        assert new_task(client, kinds=("selfplay", "rating"))["kind"] == "selfplay"
    response = client.post(
        "/api/v1/tasks/",
        {"client_version": "0.1.0", "client_instance_id": "machine-1", "kinds": ["rating"], "games": 4},
        format="json",
    )
    assert response.status_code == 503 and response.json()["error"]["code"] == "no_work"
    lift(user, None)
    assert new_task(client, kinds=("rating",))["kind"] == "rating"


def test_a_run_may_give_rating_tasks_to_one_group_alone(run):
    from django.contrib.auth.models import Group

    _settings(run, rating_game_prob=1.0, rating_group="raters")
    (member, member_client), (_, stranger) = _accounts("ann", "mallory")
    member.groups.add(Group.objects.create(name="raters"))
    _candidate(run, "cand", run.networks.get(is_random=True))
    assert new_task(member_client, kinds=("selfplay", "rating"))["kind"] == "rating"
    assert new_task(stranger, kinds=("selfplay", "rating"))["kind"] == "selfplay"
    response = stranger.post(
        "/api/v1/tasks/",
        {"client_version": "0.1.0", "client_instance_id": "machine-1", "kinds": ["rating"], "games": 4},
        format="json",
    )
    assert response.status_code == 503 and "group 'raters'" in response.json()["error"]["message"]


@pytest.mark.kernels
def test_rating_tasks_may_wait_for_self_play_games_of_the_account(run, tmp_path):
    from server.games.models import TrainingGame

    _settings(run, rating_game_prob=1.0, rating_min_selfplay_games=2)
    ((user, client),) = _accounts("newcomer")
    random_net = run.networks.get(is_random=True)
    _candidate(run, "cand", random_net)
    assert new_task(client, kinds=("selfplay", "rating"))["kind"] == "selfplay"
    response = client.post(
        "/api/v1/tasks/",
        {"client_version": "0.1.0", "client_instance_id": "machine-1", "kinds": ["rating"], "games": 4},
        format="json",
    )
    assert response.status_code == 503
    assert "at least 2 self-play games" in response.json()["error"]["message"]
    games = helpers.selfplay_games(tmp_path, random_net.name, count=2)
    helpers.store_training_games(run, user, games, network=random_net)
    TrainingGame.objects.filter(user=user).update(disabled=True)
    assert new_task(client, kinds=("selfplay", "rating"))["kind"] == "selfplay"  # disabled games do not count
    TrainingGame.objects.filter(user=user).update(disabled=False)
    assert new_task(client, kinds=("selfplay", "rating"))["kind"] == "rating"


# --- games that stop counting --------------------------------------------------------------------
def _accepted_with_a_forgers_help(run):
    """A candidate accepted with 20 of 40 points, 10 of them from mallory's forged wins (four accounts
    at a share of a quarter)."""
    _settings(run, rule="fixed", fixed_games=40, fixed_wins=20, account_share=0.25, rating_game_prob=1.0)
    accounts = _accounts("mallory", "ann", "ben", "cat")
    random_net = run.networks.get(is_random=True)
    run.networks.filter(pk=random_net.pk).update(created_at=timezone.now() - timedelta(days=1))
    candidate = _candidate(run, "cand", random_net)
    _gating(run, candidate)
    _games(run, accounts[0][0], candidate, random_net, "B" * 10)
    for user, _ in accounts[1:]:
        _games(run, user, candidate, random_net, "BBBBWWWWWW")  # honest: the candidate is weaker
    candidate.refresh_from_db()
    assert candidate.state == "accepted"
    return accounts, random_net, candidate


def test_a_quarantine_puts_a_decision_on_its_games_in_doubt(run, immediate_tasks, django_capture_on_commit_callbacks):
    """Quarantining the forger counts the gating again without its games: the rule would not have
    accepted; the network's page, the API and the admin say so, and staff roll it back in one action."""
    from server.accounts.models import User
    from server.audit.services import lift, quarantine
    from server.ratings.models import Gating

    accounts, random_net, candidate = _accepted_with_a_forgers_help(run)
    mallory = accounts[0][0]
    with django_capture_on_commit_callbacks(execute=True):
        quarantine(mallory, None, "forged rating games")
    gating = Gating.objects.get(candidate=candidate)
    assert gating.in_doubt and gating.doubt["decision"] != "accept"
    assert gating.doubt["tally"]["excluded"] == 10
    page = APIClient().get(f"/networks/{candidate.name}/").content.decode()
    assert "In doubt:" in page
    assert APIClient().get(f"/api/v1/networks/{candidate.name}/").json()["gating"]["in_doubt"] is True

    # Lifted, the decision holds again; quarantined again, it is in doubt again.
    with django_capture_on_commit_callbacks(execute=True):
        lift(mallory, None)
    assert not Gating.objects.get(candidate=candidate).in_doubt
    with django_capture_on_commit_callbacks(execute=True):
        quarantine(mallory, None, "forged rating games")
    assert Gating.objects.get(candidate=candidate).in_doubt

    admin = User.objects.create_superuser("boss", "boss@example.org", "a long enough password")
    client = APIClient()
    client.force_login(admin)
    listed = client.get("/admin/ratings/gating/?in_doubt__exact=1").content.decode()
    assert "cand" in listed
    response = client.post(
        "/admin/ratings/gating/",
        {"action": "force_roll_back", "_selected_action": [candidate.pk], "note": "accepted on forged games"},
    )
    assert response.status_code == 302
    candidate.refresh_from_db()
    assert candidate.state == "rejected" and not Gating.objects.get(candidate=candidate).in_doubt
    assert new_task(accounts[1][1])["network"]["name"] == random_net.name  # its predecessor plays again
    event = candidate.events.get(kind="rolled_back")
    assert (event.user, event.note) == (admin, "accepted on forged games")


def test_turning_an_account_off_puts_a_decision_on_its_games_in_doubt(
    run, immediate_tasks, django_capture_on_commit_callbacks
):
    from server.ratings.models import Gating

    accounts, _, candidate = _accepted_with_a_forgers_help(run)
    mallory = accounts[0][0]
    mallory.is_active = False
    with django_capture_on_commit_callbacks(execute=True):
        mallory.save()
    assert Gating.objects.get(candidate=candidate).in_doubt
    mallory.is_active = True
    with django_capture_on_commit_callbacks(execute=True):
        mallory.save()
    assert not Gating.objects.get(candidate=candidate).in_doubt


def test_disabling_games_in_the_admin_recounts_the_open_gating(
    run, immediate_tasks, django_capture_on_commit_callbacks
):
    from server.accounts.models import User
    from server.games.models import RatingGame
    from server.ratings.models import Gating

    _settings(run, rule="fixed", fixed_games=80, fixed_wins=40, account_share=0.25)
    accounts = _accounts("mallory", "ann", "ben", "cat")
    random_net = run.networks.get(is_random=True)
    candidate = _candidate(run, "cand", random_net)
    _gating(run, candidate)
    for user, _ in accounts:
        _games(run, user, candidate, random_net, "B" * 5)
    assert Gating.objects.get(candidate=candidate).wins == 20
    admin = User.objects.create_superuser("boss", "boss@example.org", "a long enough password")
    client = APIClient()
    client.force_login(admin)
    forged = list(RatingGame.objects.filter(user=accounts[0][0]).values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/admin/games/ratinggame/", {"action": "disable", "_selected_action": forged})
    assert response.status_code == 302
    gating = Gating.objects.get(candidate=candidate)
    assert gating.wins == 0 and gating.tally["excluded"] == 5  # three accounts left: nothing counts
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/admin/games/ratinggame/", {"action": "enable", "_selected_action": forged})
    assert Gating.objects.get(candidate=candidate).wins == 20


def test_one_account_cannot_force_a_rollback(run):
    """An accepted network that one account says loses every game is not rolled back, however many
    honest games it is among: its games count up to its share, and a rollback must also hold without
    the games of the account that weigh most against the network. A real regression, which every
    account sees, is rolled back."""
    from server.networks.models import Network
    from server.ratings.models import Rating
    from server.ratings.services import refit

    _settings(run, rule="fixed", fixed_games=40, fixed_wins=20, account_share=0.25)
    accounts = _accounts("ann", "ben", "cat", "dan", "mallory")
    honest, mallory = [user for user, _ in accounts[:4]], accounts[4][0]
    random_net = run.networks.get(is_random=True)
    run.networks.filter(pk=random_net.pk).update(created_at=timezone.now() - timedelta(days=1))
    candidate = _candidate(run, "cand", random_net)
    _gating(run, candidate)
    for user in honest:
        _games(run, user, candidate, random_net, "BW" * 5)
    candidate.refresh_from_db()
    assert candidate.state == "accepted"  # 20 points of 40, from four honest accounts
    for user in honest:
        _games(run, user, candidate, random_net, "BW" * 20)  # even, as the gating found
    _games(run, mallory, candidate, random_net, "W" * 300)
    networks, fit = refit(run)
    # 500 games count as 266: the honest 200 and 66 of mallory's (66 <= (66 + 200) / 4) ...
    assert Rating.objects.get(network=candidate).games == 266
    diff, se = fit.difference(networks.index(candidate), networks.index(random_net))
    assert diff / se < -3  # ... enough to look like a regression, but only with mallory's games
    assert Network.objects.get(pk=candidate.pk).state == "accepted"
    for user in honest:
        _games(run, user, candidate, random_net, "W" * 30)  # everyone sees it lose now
    refit(run)
    assert Network.objects.get(pk=candidate.pk).state == "rejected"
    assert candidate.events.get(kind="rolled_back").data["predecessor"] == random_net.name


# --- the audit of rating games ---------------------------------------------------------------------
def test_the_audit_flags_an_account_whose_rating_results_differ_from_the_others(run):
    from server.audit.models import AuditScore
    from server.audit.services import audit_rating_games

    _settings(run, account_share=1.0)
    accounts = _accounts("mallory", "ann", "ben", "cat", "dan")
    random_net = run.networks.get(is_random=True)
    first = _candidate(run, "gen1", random_net)
    second = _candidate(run, "gen2", first)
    for older, newer in ((random_net, first), (first, second)):
        _games(run, accounts[0][0], newer, older, "B" * 24, counted=False)  # the newer always wins
        for user, _ in accounts[1:]:
            _games(run, user, newer, older, "BW" * 12, counted=False)  # honest: even
    now = timezone.now()
    scores = {s.user.username: s for s in audit_rating_games(run, now, now - timedelta(days=1))}
    assert scores["mallory"].verdict == "flagged" and scores["mallory"].kind == "rating"
    assert {e["statistic"] for e in scores["mallory"].evidence} >= {"rating_z"}
    assert scores["mallory"].statistics["rating_z"] > 5
    assert all(scores[n].verdict == "ok" for n in ("ann", "ben", "cat", "dan"))
    assert str(scores["mallory"]) == "mallory on rating games: flagged"
    # Too few games to judge: a newcomer's one task.
    (newcomer, _), *_ = _accounts("eve")
    _games(run, newcomer, second, first, "B" * 16, counted=False)
    scores = {s.user.username: s for s in audit_rating_games(run, now, now - timedelta(days=1))}
    assert scores["eve"].verdict == AuditScore.Verdict.TOO_FEW


def test_one_accounts_flood_does_not_get_the_honest_accounts_flagged(run):
    """300 one-sided games of one account beside three honest accounts' 50 even ones each: the
    others' baseline weighs that account's games down to its share, as the ratings do, so the
    honest accounts stay within the audit's bounds and the flooder does not."""
    from server.audit.services import audit_rating_games

    _settings(run, account_share=0.25)
    accounts = _accounts("mallory", "ann", "ben", "cat")
    random_net = run.networks.get(is_random=True)
    newer = _candidate(run, "gen1", random_net)
    _games(run, accounts[0][0], newer, random_net, "B" * 300, counted=False)
    for user, _ in accounts[1:]:
        _games(run, user, newer, random_net, "BW" * 25, counted=False)
    now = timezone.now()
    scores = {s.user.username: s for s in audit_rating_games(run, now, now - timedelta(days=1))}
    assert scores["mallory"].verdict == "flagged"
    assert [scores[n].verdict for n in ("ann", "ben", "cat")] == ["ok"] * 3
    assert all(abs(scores[n].statistics["rating_z"]) < 3 for n in ("ann", "ben", "cat"))


def test_the_one_machine_platform_counts_its_one_contributors_games_whole(db, tmp_path):
    """The platform's own client plays every rating game of its run: whatever a settings document
    says, and for a run made before the cap existed, the run counts them whole."""
    from common.settings import RunSettings
    from server.platform.demo import DEMO_RUN, demo_settings, ensure_demo
    from server.runs.models import create_run

    document = demo_settings(7).to_dict()
    document["gating"].pop("account_share")  # as a run's document read before the share existed
    run = create_run(DEMO_RUN, RunSettings.from_dict(document).to_dict())
    assert run.current_settings().settings.gating.account_share == 0.25
    run, _ = ensure_demo(tmp_path / "platform.json")
    assert run.current_settings().settings.gating.account_share == 1.0
    assert run.current_settings().note.startswith("the platform's own client plays every rating game")
    version = run.current_settings().version
    ensure_demo(tmp_path / "platform.json")
    assert run.current_settings().version == version  # once
