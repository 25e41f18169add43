"""Files in storage, named by their content's sha256.

Uploads are kept as ``<kind>/<aa>/<bb>/<sha256><suffix>``: the same bytes always get the same name,
a name never changes its content, and a retried write is harmless. On local disk every file is
written to a temporary file, fsynced and renamed into place, so a crash never leaves half a file
under a real name. Callers store files after validating them, inside the database transaction of
the row that refers to them, and remove what they wrote if that transaction fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from django.core.files.base import ContentFile, File
from django.core.files.storage import FileSystemStorage, Storage, default_storage
from django.db.models.fields.files import FieldFile

log = logging.getLogger(__name__)

READ_ATTEMPTS = 3  # a stored file's read is tried this often before the file counts as unreadable
READ_RETRY_SECONDS = 1.0  # the wait before the second attempt; doubled before each further one


class AtomicFileSystemStorage(FileSystemStorage):
    """Local storage whose writes are atomic (temporary file, fsync, rename) and which keeps an
    existing name as it is (content-addressed names never need another)."""

    def get_available_name(self, name, max_length=None):
        return name

    def _save(self, name, content):
        full = Path(self.path(name))
        full.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{full.name}.", suffix=".tmp", dir=full.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                if hasattr(content, "chunks"):
                    for chunk in content.chunks():
                        f.write(chunk)
                else:
                    f.write(content.read())
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, self.file_permissions_mode or 0o644)
            os.replace(tmp, full)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return str(name).replace("\\", "/")


def stored_name(file: FieldFile) -> str:
    """The storage name of a model's file field; FileNotFoundError when the field holds no file."""
    if not file.name:
        raise FileNotFoundError(f"{file.field.name} of {file.instance!r} holds no file")
    return file.name


def content_name(kind: str, sha256: str, suffix: str) -> str:
    return f"{kind}/{sha256[:2]}/{sha256[2:4]}/{sha256}{suffix}"


def public_url(name: str) -> str | None:
    """The address at which anyone can read the stored file ``name`` (``SENTE_FILES_PUBLIC_URL``, a
    bucket behind a CDN), or None when there is none. The name is the content's, so the address never
    changes its content: a CDN may keep it for ever."""
    from django.conf import settings

    base = settings.SENTE_FILES_PUBLIC_URL
    return f"{base}{name}" if base and name else None


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_of_file(f) -> tuple[str, int]:
    """The sha256 and the size of a file object's content, read from its start; it is left there."""
    f.seek(0)
    digest, size = hashlib.sha256(), 0
    for chunk in iter(lambda: f.read(1 << 20), b""):
        digest.update(chunk)
        size += len(chunk)
    f.seek(0)
    return digest.hexdigest(), size


class StoredFiles:
    """The files one request writes, so they can be removed if its transaction fails."""

    def __init__(self, storage=None) -> None:
        self.storage = storage or default_storage
        self.created: list[str] = []

    def put(self, kind: str, data: bytes | File, suffix: str, sha256: str | None = None) -> str:
        """Store content under its hash name (no write when that name exists already)."""
        if sha256 is None:
            if not isinstance(data, (bytes, bytearray)):
                raise ValueError("sha256 is needed for a file object")
            sha256 = sha256_of(bytes(data))
        name = content_name(kind, sha256, suffix)
        if self.storage.exists(name):
            return name
        content = ContentFile(bytes(data)) if isinstance(data, (bytes, bytearray)) else data
        saved = self.storage.save(name, content)
        self.created.append(saved)
        return saved

    def discard(self, referenced=None) -> None:
        """Remove the files this request created, after its transaction failed; ``referenced(name)``
        says whether a committed row uses the name anyway (the same content, stored meanwhile by
        another request that found the file here), and such a file stays."""
        for name in self.created:
            try:
                if referenced is not None and referenced(name):
                    continue
                self.storage.delete(name)
            except Exception:  # the row is gone either way; an orphan file is only wasted space
                log.exception("could not remove %s after a failed transaction", name)
        self.created.clear()


def read_file(name: str) -> bytes:
    """A stored file's bytes (local disk or object storage). A failed read is tried again
    (``READ_ATTEMPTS`` in all, waiting a little longer each time): object storage fails now and then.
    A file that is not there is not waited for."""
    return _retried(name, lambda: _read(name))


def read_range(name: str, offset: int, length: int) -> bytes:
    """``length`` bytes of the stored file ``name`` from ``offset`` (fewer at its end), tried again
    as :func:`read_file` is."""
    return _retried(name, lambda: _read(name, offset, length))


def _retried(name: str, read: Callable[[], bytes]) -> bytes:
    wait = READ_RETRY_SECONDS
    for _ in range(READ_ATTEMPTS - 1):
        try:
            return read()
        except FileNotFoundError:
            raise
        except Exception as e:
            log.warning("reading stored file %s failed (%s: %s); trying again in %g s", name, type(e).__name__, e, wait)
            time.sleep(wait)
            wait *= 2
    return read()


def _read(name: str, offset: int = 0, length: int = -1) -> bytes:
    if length >= 0 and hasattr(default_storage, "bucket_name"):  # S3 (not "bucket": a connection per thread)
        return _s3_range(default_storage, name, offset, length)
    with default_storage.open(name, "rb") as f:
        if offset:
            f.seek(offset)
        return f.read(length)


def _s3_range(storage, name: str, offset: int, length: int) -> bytes:
    """One ranged GET of an object of django-storages' S3 storage (whose files read the whole object
    before the first byte)."""
    from botocore.exceptions import ClientError
    from storages.utils import clean_name

    if length == 0:
        return b""
    key = storage._normalize_name(clean_name(name))
    try:
        answer = _s3_client(storage).get_object(
            Bucket=storage.bucket_name, Key=key, Range=f"bytes={offset}-{offset + length - 1}"
        )
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code")
        if code in ("NoSuchKey", "404"):
            raise FileNotFoundError(f"{name}: no such object in storage") from None
        if code == "InvalidRange":  # from past its end
            return b""
        raise
    return answer["Body"].read()


_S3_CLIENTS: dict[tuple, object] = {}  # a storage's endpoint and keys -> its shared client for ranged reads
_S3_CLIENTS_LOCK = threading.Lock()
S3_CONNECTIONS = 32  # connections the shared client keeps open: the loader reads 16 ranges at once


def _s3_client(storage):
    """One boto3 client for the storage's ranged reads, shared by every thread (boto3's clients are
    thread-safe). django-storages makes a session and a resource per thread, which costs a few
    tenths of a second of the GIL each: every pass of the trainer, on fresh reader threads, paid it
    sixteen times."""
    where = (storage.endpoint_url, storage.region_name, storage.access_key, storage.use_ssl, storage.verify)
    client = _S3_CLIENTS.get(where)
    if client is None:
        from botocore.config import Config

        with _S3_CLIENTS_LOCK:
            client = _S3_CLIENTS.get(where)
            if client is None:
                client = storage._create_session().client(
                    "s3",
                    region_name=storage.region_name,
                    use_ssl=storage.use_ssl,
                    endpoint_url=storage.endpoint_url,
                    config=storage.client_config.merge(Config(max_pool_connections=S3_CONNECTIONS)),
                    verify=storage.verify,
                )
                _S3_CLIENTS[where] = client
    return client


def storage_problem(storage: Storage) -> str | None:
    """What keeps ``storage`` from taking files, or None when it is fine. Local storage: its folder
    must exist (the server makes it at start; a folder gone later is a disk unmounted or a path
    changed) and take a file: a probe file is written and deleted, which a read-only disk or wrong
    owner refuses. Object storage must answer a lookup. The answer is short (the endpoint is public);
    the log says which folder and why."""
    if isinstance(storage, FileSystemStorage):
        folder = Path(storage.location)
        if not folder.is_dir():
            log.warning("health check: the storage folder %s does not exist", folder)
            return "folder missing"
        try:
            fd, probe = tempfile.mkstemp(prefix=".healthz.", suffix=".tmp", dir=folder)
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            log.warning("health check: the storage folder %s takes no files: %s", folder, e)
            return f"folder not writable: {type(e).__name__}"
        return None
    try:
        storage.exists("healthz")
    except Exception as e:
        log.warning("health check: storage unreachable: %s", e)
        return f"unreachable: {type(e).__name__}"
    return None
