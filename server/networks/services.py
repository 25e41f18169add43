"""Adding a network: an uploaded file checked (:func:`take_upload`), then its row and its file
stored together or not at all (:func:`store_network`).

The upload's checks, in order (each failure is an :class:`~server.refusals.Refused` naming the
field): the run and the parent exist, the parent is of the run, the name is no stable link's
(``strongest``, ``released``) and is free, the file is within
the size limit, its header reads and names this network, its sha256 is the declared one (if any),
and no network has this very file.

The file is stored by its sha256 (``server.files``) inside the transaction that makes the row; if
the transaction fails, the file this call wrote is removed again. Both the upload API and the
trainer add networks through here. A run whose gating rule is ``none`` accepts the network in the
same transaction (the ratings answer ``signals.network_stored``). Once the row is committed, the
network's canary reference is queued for the background worker (``server.networks.tasks``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import File
from django.db import IntegrityError, transaction

from common.architecture import ModelConfig
from common.nn.header import ModelFileError, ModelHeader, header_length, parse_header
from server.accounts.models import User
from server.files import StoredFiles
from server.networks import signals
from server.networks.models import ALIASES, Network
from server.networks.tasks import request_canary
from server.refusals import Conflict, invalid
from server.runs.models import Run, forget_state

CHUNK = 1 << 20


def store_network(
    *,
    run: Run,
    name: str,
    content: File,
    size: int,
    sha256: str,
    config: ModelConfig,
    parent: Network | None = None,
    train_step: int = 0,
    rows_seen: int = 0,
    user: User | None = None,
    notes: str = "",
) -> Network:
    """A candidate network of ``run`` from a checked network file (``content``, ``size`` bytes,
    ``sha256``, its ``config``), accepted at once when the run gates no network. Raises
    IntegrityError when the name is taken meanwhile."""
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
            signals.network_stored.send(sender=Network, network=network)
            network.refresh_from_db(fields=["state"])  # a run that gates nothing has accepted it
    except BaseException:
        files.discard(lambda stored: Network.objects.filter(file=stored).exists())
        raise
    forget_state()
    return network


@dataclass(frozen=True)
class NetworkUpload:
    """An upload's fields, their formats already checked (``NetworkUploadSerializer``)."""

    name: str
    run: str
    file: File
    parent: str = ""
    train_step: int = 0
    rows_seen: int = 0
    sha256: str = ""
    notes: str = ""


def _name_taken(name: str) -> Conflict:
    return Conflict(f"a network named {name!r} exists already", code="exists", field="name")


def _run_and_parent(upload: NetworkUpload) -> tuple[Run, Network | None]:
    run = Run.objects.filter(name=upload.run).first()
    if run is None:
        raise invalid("run", f"there is no run {upload.run!r}")
    if not upload.parent:
        return run, None
    parent = Network.objects.filter(name=upload.parent).first()
    if parent is None:
        raise invalid("parent", f"there is no network {upload.parent!r}")
    if parent.run_id != run.pk:
        raise invalid("parent", f"network {parent.name!r} belongs to run {parent.run.name!r}, not {run.name!r}")
    return run, parent


def _header(upload: NetworkUpload) -> ModelHeader:
    """The file's header, after its size; it must name the network being uploaded."""
    content, size = upload.file, upload.file.size
    limit = settings.SENTE_LIMITS["network_bytes"]
    if size > limit:
        raise invalid("file", f"is {size} bytes, more than the {limit} this server takes", "too_large")
    content.seek(0)
    try:
        n = header_length(content.read(8), "upload", size)
        header = parse_header(content.read(n), size, "upload")
    except ModelFileError as e:
        raise invalid("file", str(e).replace("network file upload: ", ""), "bad_file") from None
    if header.name != upload.name:
        raise invalid("file", f"the file says its network is {header.name!r}, not {upload.name!r}", "name_mismatch")
    return header


def _sha256(upload: NetworkUpload) -> str:
    """The file's sha256, which must be the declared one (if declared) and no other network's."""
    digest = hashlib.sha256()
    upload.file.seek(0)
    for chunk in upload.file.chunks(CHUNK):
        digest.update(chunk)
    sha256 = digest.hexdigest()
    if upload.sha256 and upload.sha256 != sha256:
        raise invalid(
            "sha256",
            f"the file's sha256 is {sha256}, not the declared {upload.sha256}: the upload was damaged; send it again",
            "sha256_mismatch",
        )
    twin = Network.objects.filter(sha256=sha256).first()
    if twin is not None:
        raise Conflict(f"network {twin.name!r} has this very file already", code="duplicate_file", field="file")
    return sha256


def take_upload(user: User, upload: NetworkUpload) -> Network:
    """Check an uploaded network and store it as a candidate of its run."""
    run, parent = _run_and_parent(upload)
    if upload.name.lower() in ALIASES:
        raise invalid(
            "name", f"{upload.name!r} names a stable link ({', '.join(ALIASES)}), not a network: choose another name"
        )
    if Network.objects.filter(name=upload.name).exists():
        raise _name_taken(upload.name)
    header = _header(upload)
    sha256 = _sha256(upload)
    try:
        return store_network(
            run=run,
            name=upload.name,
            content=upload.file,
            size=upload.file.size,
            sha256=sha256,
            config=header.config,
            parent=parent,
            train_step=upload.train_step,
            rows_seen=upload.rows_seen,
            user=user,
            notes=upload.notes,
        )
    except IntegrityError:  # the same name, uploaded meanwhile
        raise _name_taken(upload.name) from None
