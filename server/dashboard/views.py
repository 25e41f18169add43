"""The website's pages: the run at a glance, networks, the Elo chart, games, contributors, releases
and getting started. Each view parses the request, reads through ``selectors`` (and the kept
``tallies``) and renders; it queries nothing itself. Every list is paginated; every page runs a fixed
number of queries, whatever the number of games (see tests/server/test_dashboard.py and
tests/bench/bench_pages.py). Every number of games a page shows counts the same games
(``tallies.counted``), read from the kept tallies, never by counting a network's or a run's games
whole."""

from __future__ import annotations

import functools
import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from common.go.rules import Rules
from server.accounts import selectors as account_selectors
from server.accounts.models import User
from server.accounts.views import AuthenticatedHttpRequest
from server.dashboard import selectors, services, tallies
from server.dashboard.releases import anchor_words, release_facts
from server.dashboard.replay import ReplayError, replay_sgf
from server.dashboard.templatetags.sente import to_rules
from server.distribution.machines import device_totals, machines_of
from server.files import stored_name
from server.games.models import Game
from server.networks import selectors as picks
from server.networks.models import Network
from server.paging import choice, friendly, paginate
from server.refusals import NotFound
from server.runs.models import Run

log = logging.getLogger(__name__)

LINEAGE_DEPTH = 12  # ancestors shown on a network's page
PERIODS = {"day": timedelta(days=1), "week": timedelta(days=7), "all": None}


def _id(pk: int, what: str) -> int:
    """A row id from the address: 404 for one no row can have (beyond the database's 64 bits)."""
    if not 0 < pk < 2**63:
        raise Http404(f"there is no {what} {pk}")
    return pk


def _json_404(view):
    """A JSON endpoint's 404: an error object like the API's, with the reason."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except Http404 as e:
            return JsonResponse({"error": {"code": "not_found", "message": str(e)}}, status=404)

    return wrapped


def _run(request: HttpRequest) -> Run | None:
    """The run named by ``?run=`` (404 when there is none by that name), else the current run."""
    name = request.GET.get("run")
    if name:
        run = selectors.run_named(name)
        if run is None:
            raise Http404(f"there is no run named {name!r}")
        return run
    return selectors.current_run()


# --- the run at a glance ---------------------------------------------------------------------------
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    run = selectors.current_run()
    context: dict = {"run": run}
    if run is not None:
        numbers = selectors.live_numbers(run)
        min_games = picks.strongest_min_games(run)
        context.update(
            {
                "numbers": numbers,
                **selectors.front_page(run, numbers["network"]),
                "strongest": picks.strongest(run, min_games),
                "strongest_min_games": min_games,
            }
        )
    return render(request, "home.html", context)


@require_GET
@_json_404
def live(request: HttpRequest) -> JsonResponse:
    """The front page's live numbers as JSON (the page polls this)."""
    run = _run(request)
    if run is None:
        return JsonResponse({"run": None})
    return JsonResponse(selectors.live_numbers(run))


# --- networks --------------------------------------------------------------------------------------
@require_GET
@friendly
def networks(request: HttpRequest) -> HttpResponse:
    run = _run(request)
    show = choice(request, "show", tuple(selectors.NETWORK_FILTERS), "all")
    page = paginator = None
    if run is not None:
        page, paginator = paginate(request, selectors.networks_shown(run, show))
        games = tallies.network_games(run, [n.pk for n in page.object_list])
        for n in page.object_list:
            n.selfplay_games = games[n.pk]
    return render(
        request,
        "dashboard/networks.html",
        {"run": run, "show": show, "filters": list(selectors.NETWORK_FILTERS), "page": page, "paginator": paginator},
    )


@require_GET
def network_detail(request: HttpRequest, name: str) -> HttpResponse:
    network = selectors.public_network(name)
    if network is None:
        raise Http404(f"there is no network named {name!r}")
    ancestors = selectors.ancestors(network, LINEAGE_DEPTH)
    shown = selectors.network_page(network)
    selfplay_games = tallies.network_games(network.run, [network.pk])[network.pk]
    gating = getattr(network, "gating", None)
    score = None
    if gating is not None:
        played = gating.wins + gating.draws + gating.losses
        score = (gating.wins + 0.5 * gating.draws) / played if played else None
    return render(
        request,
        "dashboard/network.html",
        {
            "network": network,
            "rating": getattr(network, "rating", None),
            "gating": gating,
            "score": score,
            "ancestors": ancestors,
            "more_ancestors": len(ancestors) == LINEAGE_DEPTH and ancestors[-1].parent_id,
            "children": shown["children"],
            "games": shown["games"],
            "rating_games": shown["rating_games"],
            "selfplay_games": selfplay_games,
            "events": shown["events"],
            "anchor_words": anchor_words(network, shown["anchors"]),
        },
    )


@require_GET
def picked_network(request: HttpRequest, alias: str) -> HttpResponse:
    """/networks/strongest/ and /networks/released/: the page of the network the link names now."""
    try:
        network, _ = picks.picked(alias, request.GET.get("run"))
    except NotFound as e:
        raise Http404(e.message) from None
    return redirect("network", network.name)


# --- the Elo chart ---------------------------------------------------------------------------------
@require_GET
def elo(request: HttpRequest) -> HttpResponse:
    run = _run(request)
    return render(request, "dashboard/elo.html", {"run": run, "fit": selectors.rating_fit(run)})


@require_GET
@_json_404
def elo_data(request: HttpRequest) -> JsonResponse:
    """Every network of the run, oldest first, as columns, and the anchors' ratings: the chart's data."""
    run = _run(request)
    if run is None:
        return JsonResponse({"run": None, "networks": {}, "anchors": []})
    return JsonResponse(
        {
            "run": run.name,
            "networks": selectors.elo_columns(run),
            "anchors": selectors.anchor_lines(run),
            "z95": picks.Z95,
        }
    )


# --- games -----------------------------------------------------------------------------------------
def _named_network(request: HttpRequest) -> Network | None:
    name = request.GET.get("network")
    if not name:
        return None
    network = selectors.network_named(name)
    if network is None:
        raise Http404(f"there is no network named {name!r}")
    return network


def _named_user(request: HttpRequest) -> User | None:
    name = request.GET.get("user")
    if not name:
        return None
    user = selectors.contributor_named(name)
    if user is None:
        raise Http404(f"there is no contributor named {name!r}")
    return user


@require_GET
@friendly
def games(request: HttpRequest, kind: str) -> HttpResponse:
    """The games of a kind (``kind``: training or rating, from the address), of the run, or of a
    network (``?network=``; a rating game is a network's as black or as white), or a contributor's
    (``?user=``), newest first."""
    of = selectors.KINDS[kind]
    network = _named_network(request)
    user = _named_user(request)
    run = network.run if network else _run(request)
    page = paginator = None
    if run is not None:
        page, paginator = paginate(request, of.games(run, network, user))
    return render(
        request,
        "dashboard/games.html",
        {"run": run, "network": network, "who": user, "page": page, "paginator": paginator, "kind": kind},
    )


def _replay(game: Game) -> tuple[dict | None, str | None, Rules | None, float | None]:
    """The game's positions for the board, or why there are none; and the rules and komi it was
    played by: the record's, by which it is replayed (the row's only when the record is missing,
    does not name them or cannot be read)."""
    rules, komi = to_rules(game.rules), game.komi
    try:
        with default_storage.open(stored_name(game.sgf), "rb") as f:
            data = f.read()
    except (FileNotFoundError, OSError) as e:
        log.warning("game %s: its SGF %s cannot be read: %s", game.pk, game.sgf.name, e)
        return None, "The game's record is missing from storage.", rules, komi
    try:
        replay = replay_sgf(data, rules, komi)
    except ReplayError as e:
        log.warning("game %s: its SGF %s cannot be replayed: %s", game.pk, game.sgf.name, e)
        return None, f"The game's record cannot be replayed: {e}", rules, komi
    return replay.data(), None, replay.rules, replay.komi


@require_GET
def game_detail(request: HttpRequest, pk: int, kind: str) -> HttpResponse:
    of = selectors.KINDS[kind]
    game = of.game(_id(pk, of.what))
    if game is None:
        raise Http404(f"there is no {of.what} {pk}")
    board, problem, rules, komi = _replay(game)
    return render(
        request,
        "dashboard/game.html",
        {
            "game": game,
            "kind": kind,
            "board": board,
            "problem": problem,
            "rules": rules,
            "komi": komi,
            "sgf_url": reverse(of.sgf, args=[game.pk]),
        },
    )


@require_GET
def game_sgf(request: HttpRequest, pk: int, kind: str) -> FileResponse:
    of = selectors.KINDS[kind]
    game = of.record(_id(pk, of.what))
    if game is None:
        raise Http404(f"there is no {of.what} {pk}")
    try:
        f = default_storage.open(stored_name(game.sgf), "rb")
    except (FileNotFoundError, OSError):
        raise Http404(f"the record of {of.what} {game.pk} is missing from storage") from None
    response = FileResponse(f, content_type="application/x-go-sgf")
    response["Content-Disposition"] = f'attachment; filename="{game.client_game_id}.sgf"'
    return response


# --- contributors ----------------------------------------------------------------------------------
@require_GET
@friendly
def contributors(request: HttpRequest) -> HttpResponse:
    run = _run(request)
    period = choice(request, "period", tuple(PERIODS), "day")
    page = paginator = state = None
    devices: list[dict] = []
    if run is not None:
        devices = device_totals(run)
        state = tallies.tally_state(run)
        span = PERIODS[period]
        since = timezone.now() - span if span else None
        page, paginator = paginate(request, selectors.ranking(run, since, state))
        names = selectors.users_by_id([uid for uid, _ in page.object_list])
        window = state.window_users or {}
        page.object_list = [
            {"rank": page.start_index() + i, "user": names[uid], "counts": c, "window_rows": window.get(str(uid), 0)}
            for i, (uid, c) in enumerate(page.object_list)
            if uid in names
        ]
        services.ask_for_window(run, state)
    return render(
        request,
        "dashboard/contributors.html",
        {
            "run": run,
            "period": period,
            "periods": list(PERIODS),
            "page": page,
            "paginator": paginator,
            "state": state,
            "devices": devices,
        },
    )


@require_GET
@friendly
def contributor(request: HttpRequest, username: str) -> HttpResponse:
    who = selectors.contributor_named(username)
    if who is None:
        raise Http404(f"there is no contributor named {username!r}")
    run = _run(request)
    context: dict = {"who": who, "run": run}
    if run is not None:
        now = timezone.now()
        state = tallies.tally_state(run)
        empty = tallies.Counts()
        periods = {
            period: tallies.per_user(run, now - span if span else None, user=who, state=state, inactive=()).get(
                who.pk, empty
            )
            for period, span in PERIODS.items()
        }  # who is active
        page, paginator = paginate(request, selectors.KINDS["training"].games(run, user=who), per_page=25)
        services.ask_for_window(run, state)
        context.update(
            {
                "periods": periods,
                "page": page,
                "paginator": paginator,
                "state": state,
                "window_rows": (state.window_users or {}).get(str(who.pk), 0),
            }
        )
    return render(request, "dashboard/contributor.html", context)


# --- the account page ------------------------------------------------------------------------------
@never_cache
@login_required
def account(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The signed-in account: its settings' pages, its client tokens and its machines of the last
    week (``server.distribution.machines``: the page belongs to the website, above both)."""
    return render(
        request,
        "accounts/account.html",
        {"tokens": account_selectors.tokens_of(request.user).count(), "machines": machines_of(request.user)},
    )


# --- releases and getting started ------------------------------------------------------------------
@require_GET
@friendly
def releases(request: HttpRequest) -> HttpResponse:
    page, paginator = paginate(request, selectors.released_networks(), per_page=20)
    facts = release_facts(list(page.object_list))
    for n in page.object_list:
        n.facts = facts[n.pk]
    run = selectors.current_run()
    context = {
        "page": page,
        "paginator": paginator,
        "strongest": picks.strongest(run) if run is not None else None,
        "run": run,
        "base_url": request.build_absolute_uri("/").rstrip("/"),
    }
    return render(request, "dashboard/releases.html", context)


@require_GET
def getting_started(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "dashboard/start.html",
        {"server_url": request.build_absolute_uri("/"), "source_url": settings.SENTE_SOURCE_URL},
    )
