"""The networks' canary references: each network's fp32 CPU outputs on the canary positions
(``common.canary``), stored as an npz file and served with the network's details.

A stored network queues its computation (``server.networks.tasks.request_canary``; the upload
answers at once, the database worker computes it); ``manage.py canary`` computes what is missing or
of an older canary for networks already there.
"""

from __future__ import annotations

import logging
import time

from django.db import transaction
from django.utils import timezone

from common import canary
from server.files import StoredFiles, read_file, sha256_of, stored_name
from server.networks.models import Network, NetworkCanary

log = logging.getLogger(__name__)


def is_current(network: Network) -> bool:
    """Does the network have a reference of this server's canary?"""
    ref = NetworkCanary.objects.filter(network=network).first()
    return ref is not None and ref.fingerprint == canary.fingerprint()


def compute_canary(network: Network) -> NetworkCanary:
    """Evaluate the network on the canary positions (CPU, fp32) and store the outputs, replacing an
    earlier reference. ValueError naming the network for the random network or an unreadable file."""
    import torch  # here, not above: the web processes that check fingerprints never load torch

    from common.nn.canary import evaluate_canary
    from common.nn.modelfile import ModelFileError, decode_model, model_of

    if network.is_random or not network.file:
        raise ValueError(f"network {network.name} is the random network: it has no outputs to check")
    try:
        name = stored_name(network.file)
        model = model_of(decode_model(read_file(name), name), "cpu")
    except ModelFileError as e:
        raise ValueError(f"network {network.name}: {e}") from None
    started = time.perf_counter()
    with torch.inference_mode():
        outputs = evaluate_canary(model, "cpu", None)
    seconds = time.perf_counter() - started
    npz = outputs.to_npz()
    sha256 = sha256_of(npz)
    files = StoredFiles()
    try:
        with transaction.atomic():
            name = files.put("canaries", npz, ".npz", sha256=sha256)
            ref, _ = NetworkCanary.objects.update_or_create(
                network=network,
                defaults=dict(
                    version=canary.CANARY_VERSION,
                    fingerprint=outputs.fingerprint,
                    file=name,
                    sha256=sha256,
                    size_bytes=len(npz),
                    seconds=seconds,
                    computed_at=timezone.now(),
                ),
            )
    except BaseException:
        files.discard(lambda stored: NetworkCanary.objects.filter(file=stored).exists())
        raise
    log.info("canary of network %s computed in %.2f s", network.name, seconds)
    return ref
