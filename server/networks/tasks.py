"""The networks' background work: a new network's canary reference (see server.networks.canary)."""

from __future__ import annotations

import logging

from django.db import transaction
from django_tasks import task

from server.networks.canary import compute_canary, is_current
from server.networks.models import Network

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
