"""Storing a new network: its row and its file, together or not at all.

The file is stored by its sha256 (``server.files``) inside the transaction that makes the row; if
the transaction fails, the file this call wrote is removed again. Both the upload API and the
trainer add networks through here. Once the row is committed, the network's canary reference is
queued for the background worker (``server.networks.canary``).
"""

from __future__ import annotations

from django.core.files.base import File
from django.db import transaction

from common.nn.config import ModelConfig
from server.files import StoredFiles
from server.networks.canary import request_canary
from server.networks.models import Network
from server.runs.models import forget_state


def store_network(
    *,
    run,
    name: str,
    content: File,
    size: int,
    sha256: str,
    config: ModelConfig,
    parent=None,
    train_step: int = 0,
    rows_seen: int = 0,
    user=None,
    notes: str = "",
) -> Network:
    """A candidate network of ``run`` from a checked network file (``content``, ``size`` bytes,
    ``sha256``, its ``config``). Raises IntegrityError when the name is taken meanwhile."""
    files = StoredFiles()
    try:
        with transaction.atomic():
            content.seek(0)
            network = Network.objects.create(
                name=name,
                run=run,
                parent=parent,
                architecture=config.to_dict(),
                size_name=f"b{config.num_blocks}c{config.trunk_channels}",
                size_bytes=size,
                sha256=sha256,
                train_step=train_step,
                rows_seen=rows_seen,
                uploaded_by=user,
                notes=notes,
            )
            network.file.name = files.put("networks", content, ".safetensors", sha256=sha256)
            network.save(update_fields=["file"])
            request_canary(network)
    except BaseException:
        files.discard(lambda stored: Network.objects.filter(file=stored).exists())
        raise
    forget_state()
    return network
