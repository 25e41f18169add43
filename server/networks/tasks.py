"""The networks' background work: a new network's canary reference (see server.networks.canary)."""

from __future__ import annotations

import logging

from django_tasks import task

log = logging.getLogger(__name__)


@task()
def compute_network_canary(network_id: int) -> None:
    from server.networks.canary import compute_canary, is_current
    from server.networks.models import Network

    network = Network.objects.filter(pk=network_id).first()
    if network is None:
        log.info("network %s is gone; its canary is not computed", network_id)
        return
    if is_current(network):
        return
    compute_canary(network)
