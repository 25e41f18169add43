#!/usr/bin/env python3
"""Smoke test of a Sente deployment: is everything a client and a visitor need answering?

    python deploy/smoke.py https://go.example.org [--token TOKEN | --username NAME (password on stdin)]

Checks, each printed with its result: the health endpoint (database and storage), the API schema,
the current run, the dashboard's front page and static files, the metrics; with a client token (or
a username and password, which make one), a task round trip: a self-play task is handed out,
recorded, and names a network whose file (when it has one) downloads whole with the announced size
and sha256, and in pieces (a byte range answers 206 with the right bytes). Exits 0 when all pass, 1
otherwise. Needs only Python and requests.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import uuid

import requests

TIMEOUT = 20


class Smoke:
    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.failures = 0
        self.session = requests.Session()

    def check(self, name: str, test) -> object:
        try:
            detail = test()
        except Exception as e:  # every failure is reported, not raised
            self.failures += 1
            print(f"FAIL {name}: {e}")
            return None
        print(f"ok   {name}" + (f": {detail}" if isinstance(detail, str) else ""))
        return detail

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.session.get(self.url + path, timeout=TIMEOUT, **kwargs)


def expect(response: requests.Response, status: int = 200) -> requests.Response:
    if response.status_code != status:
        raise AssertionError(f"{response.request.method} {response.url} answered {response.status_code}, "
                             f"not {status}: {response.text[:300]}")
    return response


def download(smoke: Smoke, network: dict) -> str:
    """What a resuming client needs: a range of the file comes back as 206 with exactly those bytes,
    and the whole file has the size and sha256 the task announced. (Not the ETag: nginx or object
    storage may send the file with a validator of their own.)"""
    size, sha256 = int(network.get("bytes") or 0), network.get("sha256")
    start = size // 2
    stop = min(size, start + 4096)
    part = expect(smoke.session.get(network["url"], headers={"Range": f"bytes={start}-{stop - 1}"}, timeout=TIMEOUT),
                  206)
    if part.headers.get("Content-Range") != f"bytes {start}-{stop - 1}/{size}":
        raise AssertionError(f"the range {start}-{stop - 1} came back as {part.headers.get('Content-Range')!r}")
    digest, length, window = hashlib.sha256(), 0, b""
    with smoke.session.get(network["url"], stream=True, timeout=TIMEOUT) as whole:
        expect(whole)
        for chunk in whole.iter_content(1 << 20):
            if length < stop and length + len(chunk) > start:
                window += chunk[max(0, start - length):stop - length]
            digest.update(chunk)
            length += len(chunk)
    if length != size or digest.hexdigest() != sha256:
        raise AssertionError(f"the file has {length} bytes and sha256 {digest.hexdigest()}, not the announced "
                             f"{size} and {sha256}")
    if part.content != window:
        raise AssertionError(f"the bytes of the range {start}-{stop - 1} are not those of the file")
    return f"{network['name']}: {size:,} bytes with the announced sha256; bytes {start}-{stop - 1} alone (206) match"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the server's address, e.g. https://go.example.org")
    parser.add_argument("--token", help="a client token for the task round trip")
    parser.add_argument("--username", help="log in as this user for the task round trip (password on stdin)")
    args = parser.parse_args()
    smoke = Smoke(args.url)

    def health():
        body = expect(smoke.get("/healthz")).json()
        if body.get("database") != "ok" or body.get("storage") != "ok":
            raise AssertionError(f"not healthy: {body}")
        return "database and storage reachable"

    def schema():
        body = expect(smoke.get("/api/v1/schema/", headers={"Accept": "application/vnd.oai.openapi+json"})).json()
        missing = {"/api/v1/tasks/", "/api/v1/games/training/"} - set(body.get("paths", {}))
        if missing:
            raise AssertionError(f"the schema lacks {', '.join(sorted(missing))}")
        return f"OpenAPI {body.get('openapi')}, {len(body['paths'])} paths"

    def current_run():
        body = expect(smoke.get("/api/v1/runs/current/")).json()
        return f"run {body['run']} ({body['status']}), network {(body.get('network') or {}).get('name')}"

    def front_page():
        page = expect(smoke.get("/")).text
        css = [part.split('"')[0] for part in page.split('href="')[1:] if part.split('"')[0].endswith(".css")]
        if not css:
            raise AssertionError("the front page links no stylesheet")
        expect(smoke.get(css[0]))
        return f"front page and {css[0]}"

    def metrics():
        text = expect(smoke.get("/metrics")).text
        if "sente_training_games{" not in text:
            raise AssertionError("no sente_training_games in the metrics")
        return f"{sum(1 for line in text.splitlines() if line and not line.startswith('#'))} samples"

    smoke.check("health", health)
    smoke.check("API schema", schema)
    smoke.check("current run", current_run)
    smoke.check("front page", front_page)
    smoke.check("metrics", metrics)

    token = args.token
    if token is None and args.username:
        def login():
            password = sys.stdin.readline().rstrip("\n")
            body = expect(smoke.session.post(smoke.url + "/api/v1/auth/token/", json={
                "username": args.username, "password": password, "name": "smoke test"}, timeout=TIMEOUT), 201).json()
            return body["token"]
        token = smoke.check("login", login)
    if token:
        headers = {"Authorization": f"Token {token}"}

        def task():
            body = expect(smoke.session.post(smoke.url + "/api/v1/tasks/", json={
                "client_version": "0.1.0", "client_instance_id": f"smoke-{uuid.uuid4().hex[:8]}",
                "kinds": ["selfplay"], "games": 1}, headers=headers, timeout=TIMEOUT), 201).json()
            return body

        body = smoke.check("task round trip", task)
        network = (body or {}).get("network") or {}
        if network.get("url"):
            smoke.check("network download", lambda: download(smoke, network))
    else:
        print("skip task round trip: give --token or --username")
    print("all checks passed" if not smoke.failures else f"{smoke.failures} check(s) failed")
    return 1 if smoke.failures else 0


if __name__ == "__main__":
    sys.exit(main())
