#!/usr/bin/env python3
"""Smoke test of a Sente deployment: is everything a client and a visitor need answering?

    python deploy/smoke.py https://go.example.org --token TOKEN | --username NAME (password on stdin)

Checks, each printed with its result: the health endpoint (the database reachable with every
migration applied, the storage taking files), the API schema, the current run, the dashboard's
front page and static files, the metrics; and, with a client token (or a username and password,
which make one; ``--no-task`` leaves it out), a task round trip: a self-play task of one game is handed
out, recorded (the account's task count goes up), for the current run and network, not expired;
and the network's file (when it has one) downloads whole with the announced size and sha256, and in
pieces (a byte range answers 206 with the right bytes). The API cannot take a task back: the task
is left to expire unplayed, and nothing else is written. Exits 0 when all pass, 1 otherwise. Needs
only Python and requests.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import uuid
from datetime import UTC, datetime

import requests

TIMEOUT = 20
CLIENT_VERSION = "0.1.0"  # the task's client version when the current run was not read


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
        raise AssertionError(
            f"{response.request.method} {response.url} answered {response.status_code}, "
            f"not {status}: {response.text[:300]}"
        )
    return response


def download(smoke: Smoke, network: dict) -> str:
    """What a resuming client needs: a range of the file comes back as 206 with exactly those bytes,
    and the whole file has the size and sha256 the task announced. (Not the ETag: nginx or object
    storage may send the file with a validator of their own.)"""
    size, sha256 = int(network.get("bytes") or 0), network.get("sha256")
    start = size // 2
    stop = min(size, start + 4096)
    part = expect(
        smoke.session.get(network["url"], headers={"Range": f"bytes={start}-{stop - 1}"}, timeout=TIMEOUT), 206
    )
    if part.headers.get("Content-Range") != f"bytes {start}-{stop - 1}/{size}":
        raise AssertionError(f"the range {start}-{stop - 1} came back as {part.headers.get('Content-Range')!r}")
    digest, length, window = hashlib.sha256(), 0, b""
    with smoke.session.get(network["url"], stream=True, timeout=TIMEOUT) as whole:
        expect(whole)
        for chunk in whole.iter_content(1 << 20):
            if length < stop and length + len(chunk) > start:
                window += chunk[max(0, start - length) : stop - length]
            digest.update(chunk)
            length += len(chunk)
    if length != size or digest.hexdigest() != sha256:
        raise AssertionError(
            f"the file has {length} bytes and sha256 {digest.hexdigest()}, not the announced {size} and {sha256}"
        )
    if part.content != window:
        raise AssertionError(f"the bytes of the range {start}-{stop - 1} are not those of the file")
    return f"{network['name']}: {size:,} bytes with the announced sha256; bytes {start}-{stop - 1} alone (206) match"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the server's address, e.g. https://go.example.org")
    parser.add_argument("--token", help="a client token for the task round trip")
    parser.add_argument(
        "--username",
        help="log in as this user for the task round trip (password on stdin); "
        "this makes a client token named 'smoke test'",
    )
    parser.add_argument(
        "--no-task", action="store_true", help="leave out the task round trip (it needs --token or --username)"
    )
    parser.add_argument(
        "--metrics-token",
        default=os.environ.get("SENTE_METRICS_TOKEN"),
        help="the server's SENTE_METRICS_TOKEN (production servers have one; default: that variable)",
    )
    args = parser.parse_args()
    if not (args.token or args.username or args.no_task):
        parser.error(
            "the task round trip needs a client token (--token) or an account (--username); --no-task leaves it out"
        )
    smoke = Smoke(args.url)

    def health():
        body = expect(smoke.get("/healthz")).json()
        if body.get("database") != "ok" or body.get("schema") != "ok" or body.get("storage") != "ok":
            raise AssertionError(f"not healthy: {body}")
        return "database reachable with every migration applied; storage takes files"

    def schema():
        body = expect(smoke.get("/api/v1/schema/", headers={"Accept": "application/vnd.oai.openapi+json"})).json()
        missing = {"/api/v1/tasks/", "/api/v1/games/training/"} - set(body.get("paths", {}))
        if missing:
            raise AssertionError(f"the schema lacks {', '.join(sorted(missing))}")
        return f"OpenAPI {body.get('openapi')}, {len(body['paths'])} paths"

    run: dict = {}

    def current_run():
        run.update(expect(smoke.get("/api/v1/runs/current/")).json())
        return f"run {run['run']} ({run['status']}), network {(run.get('network') or {}).get('name')}"

    def front_page():
        page = expect(smoke.get("/")).text
        css = [part.split('"')[0] for part in page.split('href="')[1:] if part.split('"')[0].endswith(".css")]
        if not css:
            raise AssertionError("the front page links no stylesheet")
        expect(smoke.get(css[0]))
        return f"front page and {css[0]}"

    def metrics():
        auth = {"Authorization": f"Bearer {args.metrics_token}"} if args.metrics_token else {}
        response = smoke.get("/metrics", headers=auth)
        if response.status_code == 401:
            given = "the token given was refused" if args.metrics_token else "no token was given"
            raise AssertionError(
                f"/metrics wants the server's scrape token ({given}): pass --metrics-token or set SENTE_METRICS_TOKEN"
            )
        text = expect(response).text
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
            body = expect(
                smoke.session.post(
                    smoke.url + "/api/v1/auth/token/",
                    json={"username": args.username, "password": password, "name": "smoke test"},
                    timeout=TIMEOUT,
                ),
                201,
            ).json()
            return body["token"]

        token = smoke.check("login", login)
    if token:
        headers = {"Authorization": f"Token {token}"}
        task: dict = {}

        def round_trip():
            # The API cannot take a task back: this leaves one self-play task of one game, which
            # expires unplayed (no game, no upload, no refusal is recorded).
            before = expect(smoke.session.get(smoke.url + "/api/v1/me/", headers=headers, timeout=TIMEOUT)).json()
            request = {
                "client_version": run.get("min_client_version") or CLIENT_VERSION,
                "client_instance_id": f"smoke-{uuid.uuid4().hex[:8]}",
                "kinds": ["selfplay"],
                "games": 1,
            }
            task.update(
                expect(
                    smoke.session.post(smoke.url + "/api/v1/tasks/", json=request, headers=headers, timeout=TIMEOUT),
                    201,
                ).json()
            )
            after = expect(smoke.session.get(smoke.url + "/api/v1/me/", headers=headers, timeout=TIMEOUT)).json()
            if after["tasks"] < before["tasks"] + 1:
                raise AssertionError(
                    f"the task was handed out but not recorded: {before['username']} has "
                    f"{after['tasks']} tasks, as before"
                )
            network = (task.get("network") or {}).get("name")
            if run and (task["run"], network) != (run["run"], (run.get("network") or {}).get("name")):
                raise AssertionError(
                    f"the task is for run {task['run']} and network {network}, not the current "
                    f"run's {run['run']} and {(run.get('network') or {}).get('name')}"
                )
            expires = datetime.fromisoformat(task["expires_at"].replace("Z", "+00:00"))
            if expires <= datetime.now(UTC):
                raise AssertionError(f"the task expired already ({task['expires_at']})")
            return (
                f"task {task['id']} handed out and recorded ({before['username']}'s tasks: {before['tasks']} -> "
                f"{after['tasks']}), run {task['run']}, network {network}, expires {task['expires_at']}; "
                "it is left to expire unplayed (1 game)"
            )

        smoke.check("task round trip", round_trip)
        network = task.get("network") or {}
        if network.get("url"):
            smoke.check("network download", lambda: download(smoke, network))
        elif task:
            print(f"skip network download: {network.get('name')} has no file (the random network)")
        if args.username and not args.token:
            print(
                "note: the login made a client token named 'smoke test'; revoke it on the website "
                "(/accounts/tokens/), or pass --token next time"
            )
    else:
        print("skip task round trip (--no-task)")
    print("all checks passed" if not smoke.failures else f"{smoke.failures} check(s) failed")
    return 1 if smoke.failures else 0


if __name__ == "__main__":
    sys.exit(main())
