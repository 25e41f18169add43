"""Stored files as downloads: ``ETag`` (the file's sha256) with ``If-None-Match``, single byte ranges
(``Range``, ``If-Range``) so that broken downloads resume, and the fastest server for the file:

- local storage behind nginx (``SENTE_NETWORK_FILE_ACCEL_PREFIX`` set): an ``X-Accel-Redirect`` to
  nginx's internal location over the storage folder, so nginx sends the file (ranges included). nginx
  keeps this answer's Content-Type, Content-Disposition and Cache-Control, adds Accept-Ranges itself,
  and drops the ETag unless its location puts it back (``etag off; add_header ETag
  $upstream_http_etag;``, as ``deploy/nginx`` does): its own is the file's time and size;
- object storage: a redirect to the file's (signed) URL, which serves ranges itself;
- otherwise Django streams it.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.http.response import HttpResponseBase

CHUNK = 1 << 20
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def stored_file_response(request, name: str, size: int, sha256: str, filename: str, changing: bool = False):
    """The stored file ``name`` (``size`` bytes) as a download called ``filename``. A stored file
    never changes, so caches keep it for good, unless the address may name another file later
    (``changing``, a stable link such as the strongest network's): then caches ask each time, with
    the ETag."""
    etag = f'"{sha256}"'
    headers = {
        "ETag": etag,
        "Accept-Ranges": "bytes",
        "Cache-Control": "public, no-cache" if changing else "public, max-age=31536000, immutable",
        "Content-Disposition": f'attachment; filename="{filename}"',
    }
    if _etag_matches(request.headers.get("If-None-Match", ""), etag):
        return _with_headers(HttpResponse(status=304), headers)
    try:
        default_storage.path(name)
    except NotImplementedError:  # object storage: let it serve the file (it handles ranges)
        return HttpResponseRedirect(default_storage.url(name))
    accel = settings.NETWORK_FILE_ACCEL_PREFIX
    if accel:
        response: HttpResponseBase = HttpResponse(content_type="application/octet-stream")
        response["X-Accel-Redirect"] = accel.rstrip("/") + "/" + name
        return _with_headers(response, {k: v for k, v in headers.items() if k != "Accept-Ranges"})
    start, end = 0, size - 1
    partial = False
    range_header = request.headers.get("Range")
    if_range = request.headers.get("If-Range")
    if range_header and (not if_range or if_range.strip() == etag):
        m = _RANGE.match(range_header.strip())
        if m and (m.group(1) or m.group(2)):
            if m.group(1):
                start = int(m.group(1))
                end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            else:
                start = max(0, size - int(m.group(2)))
            if start >= size or start > end:
                response = HttpResponse(status=416)
                response["Content-Range"] = f"bytes */{size}"
                return _with_headers(response, headers)
            partial = True
    f = default_storage.open(name, "rb")
    if not partial:
        response = FileResponse(f, content_type="application/octet-stream")
        response["Content-Length"] = str(size)
        return _with_headers(response, headers)
    f.seek(start)
    response = StreamingHttpResponse(
        _read_range(f, end - start + 1), status=206, content_type="application/octet-stream"
    )
    response["Content-Range"] = f"bytes {start}-{end}/{size}"
    response["Content-Length"] = str(end - start + 1)
    return _with_headers(response, headers)


def _etag_matches(header: str, etag: str) -> bool:
    """If-None-Match: '*' or any of the listed tags, weak ones (W/"...") compared by their value."""
    tags = [t.strip() for t in header.split(",") if t.strip()]
    return "*" in tags or any(t.removeprefix("W/") == etag for t in tags)


def _read_range(f, length: int):
    try:
        while length > 0:
            chunk = f.read(min(CHUNK, length))
            if not chunk:
                break
            length -= len(chunk)
            yield chunk
    finally:
        f.close()


def _with_headers(response, headers: dict):
    for key, value in headers.items():
        response[key] = value
    return response
