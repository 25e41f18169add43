"""The ratings' answers to the writes below them, and to their own decisions, connected in
``RatingsConfig.ready()``: a network stored is accepted at once when its run gates none; a rating
game stored is counted into its gating and asks for a refit; rating games, or an account's games,
that stop or start counting have their runs' gatings counted again and their ratings refitted; an
accepted or released network's KataGo file is queued."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from server.accounts.models import User
from server.games.models import RatingGame
from server.networks.models import Network
from server.networks.tasks import request_katago_file
from server.ratings.models import NetworkEvent
from server.ratings.promotion import accept_ungated
from server.ratings.tasks import account_changed, rating_game_stored, rating_games_changed

log = logging.getLogger(__name__)


def accept_when_stored(sender: type[Network], network: Network, **kwargs: Any) -> None:
    """network_stored: under the gating rule ``none`` the network is accepted at once."""
    accept_ungated(network.run)


def count_rating_game(sender: type[RatingGame], game: RatingGame, **kwargs: Any) -> None:
    """game_stored, for rating games."""
    rating_game_stored(game)


def recount_when_rating_games_change(sender: type[RatingGame], run_ids: list[int], **kwargs: Any) -> None:
    """games_counting_changed, for rating games."""
    rating_games_changed(run_ids)


def recount_when_standing_changes(sender: type[User], user: User, **kwargs: Any) -> None:
    """standing_changed."""
    account_changed(user)


def queue_katago_file(
    sender: type[NetworkEvent], instance: NetworkEvent, created: bool = False, raw: bool = False, **kwargs: Any
) -> None:
    """post_save of a NetworkEvent: an accepted or released network's KataGo file is queued, so that
    it is ready before anyone asks for it."""
    kinds = (NetworkEvent.Kind.ACCEPTED, NetworkEvent.Kind.FORCED_ACCEPT, NetworkEvent.Kind.RELEASED)
    if raw or not created or instance.kind not in kinds:
        return
    network = instance.network
    if network.is_random or not network.file:
        return
    try:
        with transaction.atomic():  # a failure here must not undo the decision that saved the event
            request_katago_file(network)
    except Exception:  # the first download queues it instead
        log.exception("queueing the KataGo file of network %s failed", network.name)
