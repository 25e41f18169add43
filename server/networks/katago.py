"""A network's file in KataGo's model format (``common.nn.katago_export``), served beside our own.

The background worker makes it, never a request: a network's file may be a gigabyte, and reading and
converting it in a web worker would let anyone tie the server up. It is queued when the network is
accepted or released (``server.networks.tasks``), or by its first download, which answers 503 with
``Retry-After`` until it is ready. Its :class:`NetworkKataGoFile` row says where it stands: queued,
building, ready (its stored name, size and hash for the download's ETag), or refused with the reason,
which every later request is told at once and which is never tried again: an architecture KataGo's
format cannot hold, a file whose contents the export cannot read (a network's file never changes),
or a file that is not in the storage while the storage itself is there (a file deleted does not come
back).

Any other failure (the storage unreachable or its folder gone, a read or a write that failed, an
error of the export) gives the row back, queued, and counts it: the build is queued and taken again
no sooner than :func:`retry_wait` after it (15 minutes after the first failure in a row, twice that
after each further one, at most a day), so that an outage costs a few attempts a day and not one per
request. A build that succeeds or is refused starts the count afresh.

Two workers never build the same file at once: a worker takes the row with one conditional UPDATE
(queued to building) and only the one whose UPDATE changed it builds. A build whose worker died stays
``building``, and after :data:`BUILD_LEASE` the next request queues it again and the next worker takes
it over. The export reads the weights with ``safetensors.numpy``: the worker does not load torch for
it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import safetensors.numpy
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.architecture import ModelConfig, ModelConfigError
from common.nn.header import ModelFileError, read_header
from common.nn.katago_export import SUFFIX, KataGoExportError, export_refusal, export_version, katago_model_bytes
from server.files import StoredFiles, read_file, sha256_of, storage_problem, stored_name
from server.networks.models import Network, NetworkKataGoFile

log = logging.getLogger(__name__)

State = NetworkKataGoFile.State

# A build queued or taken this long ago and not finished is taken for lost (a task that never ran, a
# worker that died): the next request queues it again.
BUILD_LEASE = timedelta(minutes=15)
# What a download of a file not made yet is told to wait.
RETRY_AFTER_SECONDS = 30
# The longest wait after failed builds (see retry_wait).
RETRY_WAIT_MOST = timedelta(days=1)


def retry_wait(failures: int) -> timedelta:
    """How long a build that failed ``failures`` times in a row waits before it is tried again:
    :data:`BUILD_LEASE`, doubled for each failure after the first, at most :data:`RETRY_WAIT_MOST`."""
    return min(BUILD_LEASE * 2 ** min(max(failures - 1, 0), 16), RETRY_WAIT_MOST)


def _waiting(row: NetworkKataGoFile, now: datetime) -> bool:
    """Whether the row's build failed and its wait is not over."""
    return row.retry_at is not None and row.retry_at > now


def queue(network: Network) -> tuple[NetworkKataGoFile, bool]:
    """The network's row, made (queued) when it has none, or queued again when its build was lost
    (see :data:`BUILD_LEASE`); and whether the build is to be queued now. ValueError for the random
    network, which has no weights."""
    if network.is_random or not network.file:
        raise ValueError(f"network {network.name} is the random network: it has no weights to export")
    row = NetworkKataGoFile.objects.filter(network=network).first()
    if row is None:
        return NetworkKataGoFile.objects.get_or_create(network=network)
    now = timezone.now()
    lost = (row.state == State.QUEUED and row.queued_at < now - BUILD_LEASE and not _waiting(row, now)) or (
        row.state == State.BUILDING and row.started_at is not None and row.started_at < now - BUILD_LEASE
    )
    # Of the requests that find it lost at once, the one whose UPDATE changes the row queues it.
    if lost and NetworkKataGoFile.objects.filter(pk=row.pk, state=row.state, queued_at=row.queued_at).update(
        state=State.QUEUED, queued_at=now, retry_at=None
    ):
        row.refresh_from_db()
        return row, True
    return row, False


def _take(network_id: int) -> bool:
    """Take the network's queued build (or a lost one), so that no other worker builds it meanwhile;
    not one whose wait after a failure is not over (a task queued twice comes too early)."""
    now = timezone.now()
    queued = Q(state=State.QUEUED) & (Q(retry_at__isnull=True) | Q(retry_at__lte=now))
    lost = Q(state=State.BUILDING, started_at__lt=now - BUILD_LEASE)
    return bool(
        NetworkKataGoFile.objects.filter(queued | lost, network_id=network_id).update(
            state=State.BUILDING, started_at=now, retry_at=None
        )
    )


def _architecture_refusal(network: Network) -> str | None:
    """Why the architecture the network's row records cannot be exported (None: read the file to know)."""
    if not network.architecture:
        return None
    try:
        config = ModelConfig.from_dict(network.architecture)
    except ModelConfigError:
        return None  # the file's own header decides
    refusal = export_refusal(config)
    return f"network {network.name}: {refusal}" if refusal else None


def build(network_id: int) -> NetworkKataGoFile | None:
    """Make the network's KataGo file if its row waits for it and no other worker has taken it; the
    row as the build left it, None when there was nothing to do. An architecture KataGo's format
    cannot hold is refused without reading the file. A failure other than a refusal is raised, with
    the row given back to wait (see the module's docstring)."""
    if not _take(network_id):
        return None
    row = NetworkKataGoFile.objects.select_related("network").get(network_id=network_id)
    network = row.network
    try:
        refusal = _architecture_refusal(network)
        if refusal is None:
            refusal = _export(network, row)
    except Exception as e:
        failures = row.failures + 1
        now = timezone.now()
        wait = retry_wait(failures)
        NetworkKataGoFile.objects.filter(pk=row.pk, state=State.BUILDING).update(
            state=State.QUEUED, queued_at=now, started_at=None, failures=failures, retry_at=now + wait
        )
        log.warning(
            "KataGo file of %s failed (%s: %s), %d time(s) in a row; tried again after %s",
            network.name,
            type(e).__name__,
            e,
            failures,
            wait,
        )
        raise
    except BaseException:
        # The worker stops (not the build's fault): given back, queued as of now, for a later request
        # (after the lease) to queue again.
        NetworkKataGoFile.objects.filter(pk=row.pk, state=State.BUILDING).update(
            state=State.QUEUED, queued_at=timezone.now(), started_at=None
        )
        raise
    if refusal is not None:
        NetworkKataGoFile.objects.filter(pk=row.pk).update(
            state=State.REFUSED, refusal=refusal, finished_at=timezone.now(), failures=0, retry_at=None
        )
        log.info("KataGo file of %s refused: %s", network.name, refusal)
    row.refresh_from_db()
    return row


def _missing(network: Network, name: str) -> str | None:
    """The refusal of a network whose file ``name`` the storage says is not there, when the storage
    itself is (a file deleted or lost does not come back); None when the storage is away (an outage:
    the file may be there when it is back)."""
    problem = storage_problem(default_storage)
    if problem is not None:
        log.warning("KataGo file of %s: its file %s was not found, and the storage: %s", network.name, name, problem)
        return None
    return f"network {network.name}: its file ({name}) is not in the storage: it was deleted or lost"


def _export(network: Network, row: NetworkKataGoFile) -> str | None:
    """Read, convert and store the network's file, and mark the row ready (its failures forgotten);
    the refusal instead, when the file is not in the storage (and the storage is there), unreadable,
    or its architecture has no KataGo equivalent."""
    name = stored_name(network.file)
    try:
        data = read_file(name)
    except FileNotFoundError:
        refusal = _missing(network, name)
        if refusal is None:
            raise
        return refusal
    try:
        header = read_header(data, name)
        blob = katago_model_bytes(header.config, safetensors.numpy.load(data), network.name)
    except (ModelFileError, KataGoExportError) as e:
        return f"network {network.name}: {e}"
    del data
    sha256 = sha256_of(blob)
    files = StoredFiles()
    try:
        with transaction.atomic():
            stored = files.put("katago", blob, SUFFIX, sha256=sha256)
            NetworkKataGoFile.objects.filter(pk=row.pk).update(
                state=State.READY,
                refusal="",
                version=export_version(header.config),
                file=stored,
                sha256=sha256,
                size_bytes=len(blob),
                finished_at=timezone.now(),
                failures=0,
                retry_at=None,
            )
    except BaseException:
        files.discard(lambda s: NetworkKataGoFile.objects.filter(file=s).exists())
        raise
    log.info("network %s exported to KataGo's format (%d bytes, sha256 %s)", network.name, len(blob), sha256)
    return None
