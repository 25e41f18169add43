"""The networks' background work: a new network's canary reference (see server.networks.canary) and
a network's file in KataGo's format (see server.networks.katago), queued when the network is accepted
or released (``server.ratings.receivers``, where the decisions are recorded) or first asked for."""

from __future__ import annotations

import logging

from django.db import transaction
from django_tasks import task

from server.networks import katago
from server.networks.canary import compute_canary, is_current
from server.networks.models import Network, NetworkKataGoFile

log = logging.getLogger(__name__)


@task()
def compute_network_canary(network_id: int) -> None:
    network = Network.objects.filter(pk=network_id).first()
    if network is None:
        log.info("network %s is gone; its canary is not computed", network_id)
        return
    if is_current(network):
        return
    compute_canary(network)


def request_canary(network: Network) -> None:
    """Queue the computation of the network's canary once the current transaction commits."""
    if network.is_random:
        return

    def enqueue() -> None:
        try:
            compute_network_canary.enqueue(network.pk)
        except Exception:  # `manage.py canary` computes what was not queued
            log.exception("queueing the canary of network %s failed", network.name)

    transaction.on_commit(enqueue)


@task()
def build_katago_file(network_id: int) -> None:
    katago.build(network_id)


def request_katago_file(network: Network) -> NetworkKataGoFile:
    """The network's KataGo file's row; its build queued (once the current transaction commits) when
    it has none yet or its build was lost. ValueError for the random network."""
    row, queue_now = katago.queue(network)
    if queue_now:

        def enqueue() -> None:
            try:
                build_katago_file.enqueue(network.pk)
            except Exception:  # the row stays queued: a request after katago.BUILD_LEASE queues it again
                log.exception("queueing the KataGo file of network %s failed", network.name)

        transaction.on_commit(enqueue)
    return row
