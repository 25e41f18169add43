#!/usr/bin/env python3
"""The web container's health check (docker-compose.yml): ``GET /healthz`` from inside the container,
asked as nginx asks, so that Django's checks let it through: a Host from ALLOWED_HOSTS (an address
missing from it is refused with 400) and ``X-Forwarded-Proto: https`` (with SENTE_PRODUCTION on, a
plain http request is redirected to https, which nothing inside the container serves). Exits 0 when
the server answers 200, 1 otherwise, saying why. Only the standard library.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request


def host() -> str:
    """A name the server accepts: the first of ALLOWED_HOSTS that is a plain name (a leading dot,
    Django's "this domain and its subdomains", dropped), else localhost (the default's)."""
    for name in os.environ.get("ALLOWED_HOSTS", "").split(","):
        name = name.strip().lstrip(".")
        if name and "*" not in name:
            return name
    return "localhost"


def main() -> int:
    bind = os.environ.get("SENTE_BIND", "127.0.0.1:8000")
    if bind.startswith("unix:"):
        print(f"healthcheck: SENTE_BIND={bind}: only TCP addresses are checked", file=sys.stderr)
        return 1
    port = bind.rsplit(":", 1)[-1]
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/healthz", headers={"Host": host(), "X-Forwarded-Proto": "https"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            print(response.read().decode(errors="replace"))
            return 0
    except urllib.error.HTTPError as e:  # 503 (with what is failing), or 400 for a refused Host
        print(f"healthcheck: {e.code} {e.read().decode(errors='replace')[:300]}", file=sys.stderr)
    except OSError as e:
        print(f"healthcheck: 127.0.0.1:{port}: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
