"""A network's file in KataGo's model format (``common.nn.katago_export``), served beside our own.

It is made from the network's file when it is first asked for and kept in storage under its sha256
(the export is deterministic, so two requests that race store the same bytes), with a
:class:`NetworkKataGoFile` row that remembers its name, size and hash for the download's ETag. The
export reads the weights with ``safetensors.numpy``: the web server does not load torch for it.
"""

from __future__ import annotations

import logging

import safetensors.numpy
from django.db import transaction

from common.nn.header import ModelFileError, read_header
from common.nn.katago_export import SUFFIX, KataGoExportError, export_version, katago_model_bytes
from server.files import StoredFiles, sha256_of, stored_name
from server.networks.models import Network, NetworkKataGoFile

log = logging.getLogger(__name__)


def katago_file(network: Network) -> NetworkKataGoFile:
    """The network's KataGo file, exported now if it was not yet. ValueError naming the network for
    the random network, an unreadable file or an architecture KataGo's format cannot hold."""
    existing = NetworkKataGoFile.objects.filter(network=network).first()
    if existing is not None:
        return existing
    if network.is_random or not network.file:
        raise ValueError(f"network {network.name} is the random network: it has no weights to export")
    from server.training.window import read_file

    name = stored_name(network.file)
    try:
        data = read_file(name)
        header = read_header(data, name)
        blob = katago_model_bytes(header.config, safetensors.numpy.load(data), network.name)
    except (ModelFileError, KataGoExportError) as e:
        raise ValueError(f"network {network.name}: {e}") from None
    sha256 = sha256_of(blob)
    files = StoredFiles()
    try:
        with transaction.atomic():
            stored = files.put("katago", blob, SUFFIX, sha256=sha256)
            row, created = NetworkKataGoFile.objects.get_or_create(
                network=network,
                defaults=dict(version=export_version(header.config), file=stored, sha256=sha256, size_bytes=len(blob)),
            )
    except BaseException:
        files.discard(lambda s: NetworkKataGoFile.objects.filter(file=s).exists())
        raise
    if created:
        log.info("network %s exported to KataGo's format (%d bytes, sha256 %s)", network.name, len(blob), sha256)
    return row
