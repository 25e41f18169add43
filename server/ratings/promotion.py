"""Which network the run plays: gating, promotion, rollback and staff decisions.

A network arrives as a candidate. When rating games are handed out, the oldest candidate starts its
gating against the run's accepted network of that moment (state ``rating``) and gets the rating
games first (:func:`next_gating`). Its games are counted again as each is stored (:func:`record_game`,
in the upload's transaction), those that count and no more of one account's than its share
(``server.ratings.tally``), and the run's rule (``server.ratings.gating``) settles it: accepted, it
becomes the self-play network of new tasks; rejected, it is never handed out for self-play again.
Under the rule ``none`` no network is gated: each is accepted as it is stored, in place of the
self-play network of that moment (its gating record, decided at once, names that network), and a run
switched to ``none`` accepts the networks that wait, oldest first, the next time the server looks
(:func:`accept_ungated`). When games stop or start counting (a quarantine, an account turned off,
games disabled) the open gating is counted again and every decision the rule took is held against
the games that count now; one it would no longer take is put in doubt for staff to confirm or undo
(:func:`recount`).

After each refit of the ratings, under every rule, the newest accepted network is compared with the
one it replaced; if it is worse with the run's ``rollback_confidence``, it is rolled back (rejected,
and its predecessor plays again) and the event recorded (:func:`check_rollback`). Staff may accept,
reject, release, retire or roll back a network by hand, or send it back to gating (not under
``none``), with a note (:func:`staff_decision`). Every change is a :class:`NetworkEvent`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from statistics import NormalDist

import numpy as np
from django.db import transaction
from django.utils import timezone

from common.settings import NO_GATING, GatingSettings
from server.games.models import RatingGame
from server.networks.models import Network
from server.ratings.doubt import review_decisions, settle
from server.ratings.fit import Ratings
from server.ratings.gating import ACCEPT, CONTINUE, Verdict, decide, no_gating
from server.ratings.models import Gating, NetworkEvent
from server.ratings.tally import counted_rating_games, gating_tally, most_against, pair_games
from server.runs.models import forget_state

log = logging.getLogger(__name__)

STAFF_ACTIONS = ("accept", "reject", "release", "retire", "roll_back", "gate_again", "confirm")


def next_gating(run) -> Gating | None:
    """The gating that gets rating games now: the one under way, else the oldest candidate's, begun
    against the run's accepted network. A gating whose opponent is no longer accepted (rolled back,
    rejected or retired meanwhile) starts again against the accepted network of now. Under the rule
    ``none`` there is none: the networks that wait are accepted (:func:`accept_ungated`)."""
    gating = _open_gating(run)
    if gating is None and not run.networks.filter(state=Network.State.CANDIDATE).exists():
        return None  # the common case: nothing to gate, and no lock taken
    if gating_settings(run).rule == NO_GATING:
        accept_ungated(run)
        return None
    if gating is not None and gating.opponent.state == Network.State.ACCEPTED:
        return gating
    with transaction.atomic():
        # One request at a time begins or restarts a run's gating.
        type(run).objects.select_for_update().filter(pk=run.pk).first()
        opponent = run.selfplay_network()
        gating = _open_gating(run)
        if gating is not None:
            if gating.opponent.state == Network.State.ACCEPTED or opponent is None:
                return gating
            old = gating.opponent.name
            Gating.objects.filter(pk=gating.pk).update(
                opponent=opponent, wins=0, draws=0, losses=0, verdict=None, started_at=timezone.now()
            )
            NetworkEvent.objects.create(
                network_id=gating.pk,
                kind=NetworkEvent.Kind.GATING_STARTED,
                note=f"started again: {old} is no longer accepted",
                data={"opponent": opponent.name, "rule": gating.rule},
            )
            log.info(
                "gating of %s starts again against %s (%s is no longer accepted)",
                gating.candidate.name,
                opponent.name,
                old,
            )
            return _open_gating(run)
        candidate = run.networks.filter(state=Network.State.CANDIDATE).order_by("created_at", "id").first()
        if candidate is None or opponent is None:
            return None
        rule = gating_settings(run).rule
        if Gating.objects.filter(candidate=candidate).exists():  # decided once, then set back by hand
            Gating.objects.filter(candidate=candidate).delete()
        Gating.objects.create(candidate=candidate, opponent=opponent, rule=rule)
        Network.objects.filter(pk=candidate.pk).update(state=Network.State.RATING)
        NetworkEvent.objects.create(
            network=candidate, kind=NetworkEvent.Kind.GATING_STARTED, data={"opponent": opponent.name, "rule": rule}
        )
    log.info("gating of %s against %s begins (%s rule)", candidate.name, opponent.name, rule)
    return _open_gating(run)


def accept_ungated(run) -> list[Network]:
    """Under the rule ``none``: accept every network of the run that waits for gating (a candidate, or
    one playing its gating games), oldest first, each in place of the self-play network of that moment,
    so that the newest becomes the self-play network and each is later rated and checked for a
    rollback against the one it replaced. A gating under way is closed with the games it had counted
    on its record. Called when a network is stored (``server.networks.services``), when the run's
    settings change and whenever rating games are handed out (:func:`next_gating`); under another rule
    it does nothing. Returns the networks accepted."""
    waiting = (Network.State.CANDIDATE, Network.State.RATING)
    if not run.networks.filter(state__in=waiting).exists():
        return []
    accepted: list[Network] = []
    with transaction.atomic():
        # One request at a time settles a run's networks (as next_gating begins its gatings).
        type(run).objects.select_for_update().filter(pk=run.pk).first()
        if gating_settings(run).rule != NO_GATING:
            return []
        for network in run.networks.filter(state__in=waiting).order_by("created_at", "id"):
            gating = (
                Gating.objects.select_for_update()
                .filter(candidate=network, decision=CONTINUE)
                .select_related("candidate", "opponent")
                .first()
            )
            if gating is None:
                Gating.objects.filter(candidate=network).delete()  # decided once, then set back by hand
                opponent = run.selfplay_network()
                if opponent is None:  # staff took every accepted network out: there is none to replace
                    _settle(network.pk, network.name, no_gating(0, 0, 0), {})
                    accepted.append(network)
                    continue
                gating = Gating.objects.create(candidate=network, opponent=opponent, rule=NO_GATING)
            _count(gating, run)
            accepted.append(network)
    return accepted


def accept_when_ungated(sender, instance, created: bool, raw: bool = False, **kwargs) -> None:
    """post_save of a run's settings version: a new version with the rule ``none`` accepts the
    networks that wait (:func:`accept_ungated`), in the transaction that stores the version."""
    if created and not raw and instance.document.get("gating", {}).get("rule") == NO_GATING:
        accept_ungated(instance.run)


def gating_waits(run) -> bool:
    """Does a candidate wait for gating games (one playing them, or one not yet begun)?"""
    return run.networks.filter(state__in=(Network.State.CANDIDATE, Network.State.RATING)).exists()


def _open_gating(run) -> Gating | None:
    return (
        Gating.objects.filter(candidate__run=run, decision=CONTINUE)
        .select_related("candidate", "opponent")
        .order_by("started_at", "candidate_id")
        .first()
    )


def record_game(game: RatingGame) -> None:
    """Count a newly stored rating game into the gating it belongs to, if any, and settle the gating
    when the rule decides. Runs inside the upload's transaction."""
    pair = (game.black_network_id, game.white_network_id)
    gating = (
        Gating.objects.select_for_update()
        .filter(decision=CONTINUE, candidate_id__in=pair, opponent_id__in=pair)
        .select_related("candidate", "opponent")
        .first()
    )
    if gating is not None:
        _count(gating, game.run)


def _count(gating: Gating, run) -> None:
    """Count the open gating's games again (its row locked by the caller) and settle it when the rule
    decides on them."""
    settings = gating_settings(run)
    tally = gating_tally(gating.candidate_id, gating.opponent_id, gating.started_at, None, settings.account_share)
    verdict = decide(settings, tally.wins, tally.draws, tally.losses)
    gating.wins, gating.draws, gating.losses = tally.wins, tally.draws, tally.losses
    gating.tally = tally.to_dict()
    gating.settings = settings.to_dict()  # what a later review of the decision holds it against
    gating.rule = verdict.rule
    gating.verdict = verdict.to_dict()
    gating.decision = verdict.decision
    if verdict.decision != CONTINUE:
        gating.decided_at = timezone.now()
        _settle(gating.candidate_id, gating.candidate.name, verdict, gating.verdict | {"tally": gating.tally})
    gating.save()


def _settle(network_id: int, name: str, verdict: Verdict, data: dict) -> None:
    """The rule's decision on a network: its state and its event."""
    accepted = verdict.decision == ACCEPT
    Network.objects.filter(pk=network_id).update(state=Network.State.ACCEPTED if accepted else Network.State.REJECTED)
    NetworkEvent.objects.create(
        network_id=network_id,
        data=data or verdict.to_dict(),
        note=verdict.reason,
        kind=NetworkEvent.Kind.ACCEPTED if accepted else NetworkEvent.Kind.REJECTED,
    )
    transaction.on_commit(forget_state)
    log.info("gating of %s: %s (%s)", name, verdict.decision, verdict.reason)


def recount(run) -> list[Gating]:
    """After games of the run stopped or started counting (an account quarantined or turned off, or
    back; games disabled or enabled): count the open gating again, which may settle it, and hold every
    decision its rule took against the games that count now (``server.ratings.doubt``). Returns the
    gatings in doubt."""
    with transaction.atomic():
        gating = (
            Gating.objects.select_for_update()
            .filter(candidate__run=run, decision=CONTINUE)
            .select_related("candidate", "opponent")
            .first()
        )
        if gating is not None:
            _count(gating, run)
    return review_decisions(run)


def check_rollback(
    run, networks: list[Network], fit: Ratings, fit_without: Callable[[int], Ratings] | None = None
) -> Network | None:
    """Roll back the newest accepted network (the self-play network) if the ratings show it worse than
    its predecessor, the network it replaced (its gating's opponent; under the rule ``none`` the
    self-play network when it was accepted), with the run's rollback confidence; returns it if so.
    ``networks`` are those of ``fit``; the newest accepted network is read now, and one accepted
    after the fit began (not in it) waits for the next refit.

    The test is repeated as rating games come, so its error rate is spent in halves: the k-th look
    (made once the pair's games have doubled k times since the verdict, from one game for a network
    accepted without games) tests at (1 - confidence) / 2^k, and all the looks together wrongly roll
    back an equal network with at most 1 - confidence. Nobody rolls a network back alone:
    ``fit_without(account)`` (None: no such check, for a run of trusted contributors) fits the
    ratings as if the account whose games of the pair weigh most against the newest network had
    played none, and the test must hold there too. Networks accepted by staff are not second-guessed."""
    index = {n.pk: k for k, n in enumerate(networks)}
    newest = run.selfplay_network()
    if newest is None or newest.pk not in index:
        return None
    gating = Gating.objects.filter(candidate=newest, decision=ACCEPT).select_related("opponent").first()
    if gating is None or gating.opponent_id not in index:
        return None
    predecessor = gating.opponent
    games = counted_rating_games().filter(pk__in=pair_games(newest.pk, predecessor.pk).values("pk")).count()
    decided = max(1, gating.wins + gating.draws + gating.losses)
    look = gating.rollback_looks + 1
    if games < decided * 2**look:
        return None
    diff, se = fit.difference(index[newest.pk], index[predecessor.pk])
    confidence = gating_settings(run).rollback_confidence
    alpha = (1.0 - confidence) / 2**look
    Gating.objects.filter(pk=gating.pk).update(rollback_looks=look)
    if not _worse(diff, se, alpha):
        return None
    against = most_against(newest.pk, predecessor.pk)
    if fit_without is not None and against is not None:
        diff_without, se_without = fit_without(against).difference(index[newest.pk], index[predecessor.pk])
        if not _worse(diff_without, se_without, alpha):
            log.warning(
                "network %s looks worse than %s (%+.0f +- %.0f Elo) only with one account's games (%+.0f +- %.0f "
                "without them): not rolled back",
                newest.name,
                predecessor.name,
                diff,
                se,
                diff_without,
                se_without,
            )
            return None
    data = {
        "predecessor": predecessor.name,
        "elo_difference": diff,
        "standard_error": se,
        "z": diff / se,
        "confidence": confidence,
        "look": look,
        "alpha": alpha,
        "games": games,
    }
    with transaction.atomic():
        if not Network.objects.filter(pk=newest.pk, state=Network.State.ACCEPTED).update(state=Network.State.REJECTED):
            return None  # decided otherwise meanwhile
        NetworkEvent.objects.create(
            network=newest,
            kind=NetworkEvent.Kind.ROLLED_BACK,
            data=data,
            note=f"{diff:+.0f} +- {se:.0f} Elo against {predecessor.name} after {games} "
            f"games: worse at the {100 * (1 - alpha):.2f}% level (look {look})",
        )
    forget_state()
    log.warning("network %s rolled back: %+.0f +- %.0f Elo against %s", newest.name, diff, se, predecessor.name)
    return newest


def _worse(diff: float, se: float, alpha: float) -> bool:
    """Is an Elo difference ``diff`` with standard error ``se`` below 0 at the level ``alpha``?"""
    return bool(np.isfinite(diff) and np.isfinite(se) and se > 0 and diff / se < NormalDist().inv_cdf(alpha))


def staff_decision(network: Network, action: str, user=None, note: str = "") -> None:
    """A staff decision on a network, recorded as its event with the note: ``accept``, ``reject``,
    ``release`` or ``retire`` (a gating under way is closed); ``roll_back`` an accepted network (the
    network before it plays again), send a network back to ``gate_again`` (its gating starts afresh
    against the accepted network of then), or ``confirm`` a decision in doubt as it stands.
    ValueError for a network the action does not fit, and for ``gate_again`` in a run whose gating rule
    is ``none``."""
    if action not in STAFF_ACTIONS:
        raise ValueError(f"action {action!r}: expected one of {', '.join(STAFF_ACTIONS)}")
    kind = {
        "accept": NetworkEvent.Kind.FORCED_ACCEPT,
        "reject": NetworkEvent.Kind.FORCED_REJECT,
        "release": NetworkEvent.Kind.RELEASED,
        "retire": NetworkEvent.Kind.RETIRED,
        "roll_back": NetworkEvent.Kind.ROLLED_BACK,
        "gate_again": NetworkEvent.Kind.GATED_AGAIN,
        "confirm": NetworkEvent.Kind.CONFIRMED,
    }[action]
    with transaction.atomic():
        network = Network.objects.select_for_update().get(pk=network.pk)
        if action == "release":
            Network.objects.filter(pk=network.pk).update(released=True)
        elif action == "confirm":
            if not Gating.objects.filter(candidate=network, in_doubt=True).exists():
                raise ValueError(f"network {network.name}: its gating is not in doubt, there is nothing to confirm")
        elif action == "roll_back":
            if network.state != Network.State.ACCEPTED:
                raise ValueError(f"network {network.name} is {network.state}, not accepted: it cannot be rolled back")
            Network.objects.filter(pk=network.pk).update(state=Network.State.REJECTED)
        elif action == "gate_again":
            if network.is_random or network.state == Network.State.CANDIDATE:
                raise ValueError(f"network {network.name} is {network.state}: it cannot be sent back to gating")
            if gating_settings(network.run).rule == NO_GATING:
                raise ValueError(
                    f"network {network.name}: run {network.run.name} gates no network (its gating rule is none), "
                    "so a network sent back to gating would be accepted again at once; roll it back or reject it "
                    "instead, or give the run another gating rule first"
                )
            Gating.objects.filter(candidate=network).delete()
            Network.objects.filter(pk=network.pk).update(state=Network.State.CANDIDATE)
        else:
            state = {
                "accept": Network.State.ACCEPTED,
                "reject": Network.State.REJECTED,
                "retire": Network.State.RETIRED,
            }[action]
            Network.objects.filter(pk=network.pk).update(state=state)
            Gating.objects.filter(candidate=network, decision=CONTINUE).update(
                decision=action if action in ("accept", "reject") else "reject", decided_at=timezone.now()
            )
        if action in ("roll_back", "accept", "reject", "confirm"):
            settle(network, action, user)
        NetworkEvent.objects.create(network=network, kind=kind, user=user, note=note)
    forget_state()


def gating_settings(run) -> GatingSettings:
    """The run's current gating settings (the defaults if it has no settings version)."""
    version = run.current_settings()
    return version.settings.gating if version is not None else GatingSettings()
