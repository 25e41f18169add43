"""Decisions held against the games that count now.

A gating's rule decides on the games that counted then (``server.ratings.tally``). When games stop
or start counting later (an account quarantined or turned off, or back; games disabled or enabled),
each decision the rule took is counted again over the same games, with the settings it was taken
with (kept on the gating): one the rule would not take now is put *in doubt* (``Gating.in_doubt``,
the recount in ``Gating.doubt``) for staff to roll back, send back to gating or confirm; one that
holds again loses its doubt. A decision staff confirmed stays confirmed while its games stay as they
were. Gatings decided before their settings were kept are not reviewed: there is nothing to hold
them against; nor are acceptances under the rule ``none``, which no games decided.
"""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from common.settings import NO_GATING, GatingSettings
from server.networks.models import Network
from server.ratings.gating import ACCEPT, REJECT, decide
from server.ratings.models import Gating
from server.ratings.tally import gating_tally

log = logging.getLogger(__name__)


def review_decisions(run) -> list[Gating]:
    """Hold every decision the run's gating rule took against the games that count now; the gatings
    in doubt."""
    doubted = []
    decided = Gating.objects.filter(candidate__run=run, decision__in=(ACCEPT, REJECT)).exclude(rule=NO_GATING)
    for gating in decided.select_related("candidate"):
        if not _reviewable(gating):
            continue
        settings = GatingSettings.from_dict(gating.settings)
        tally = gating_tally(
            gating.candidate_id, gating.opponent_id, gating.started_at, gating.decided_at, settings.account_share
        )
        if gating.doubt and "confirmed_at" in gating.doubt and gating.doubt["tally"] == tally.to_dict():
            continue  # staff confirmed the decision on these very games
        doubt: dict[str, Any] | None = None
        in_doubt = False
        if (tally.wins, tally.draws, tally.losses) != (gating.wins, gating.draws, gating.losses):
            now = decide(settings, tally.wins, tally.draws, tally.losses)
            in_doubt = now.decision != gating.decision
            doubt = {
                "at": timezone.now().isoformat(),
                "decision": now.decision,
                "reason": now.reason,
                "tally": tally.to_dict(),
                "holds": not in_doubt,
            }
        if _without_time(doubt) != _without_time(gating.doubt) or in_doubt != gating.in_doubt:
            Gating.objects.filter(pk=gating.pk).update(doubt=doubt, in_doubt=in_doubt)
            was_in_doubt, gating.doubt, gating.in_doubt = gating.in_doubt, doubt, in_doubt
            if doubt is not None and in_doubt and not was_in_doubt:
                log.warning(
                    "gating of %s is in doubt: on the games that count now the rule says %s (%s)",
                    gating.candidate.name,
                    doubt["decision"],
                    doubt["reason"],
                )
        if in_doubt:
            doubted.append(gating)
    return doubted


def _reviewable(gating: Gating) -> bool:
    """A decision of the rule (not closed by staff), with the settings it was taken with, that still
    stands (not decided otherwise by staff or rolled back since)."""
    if not gating.verdict or gating.verdict.get("decision") != gating.decision or gating.decided_at is None:
        return False
    if not gating.settings:
        return False
    state = gating.candidate.state
    return state == (Network.State.ACCEPTED if gating.decision == ACCEPT else Network.State.REJECTED)


def settle(network: Network, action: str, user) -> None:
    """Staff decided on a network whose gating may be in doubt: undone (``roll_back``, or decided the
    other way) the doubt is over; taken again or ``confirm``-ed, the decision is confirmed on the
    games that count now, and stays so until they change."""
    gating = Gating.objects.filter(candidate=network, in_doubt=True).first()
    if gating is None:
        return
    doubt = dict(gating.doubt or {})
    if action == "confirm" or action == gating.decision:
        doubt |= {"confirmed_by": getattr(user, "username", None), "confirmed_at": timezone.now().isoformat()}
    Gating.objects.filter(pk=gating.pk).update(in_doubt=False, doubt=doubt)


def _without_time(doubt: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if doubt is None else {k: v for k, v in doubt.items() if k != "at"}
