"""The client's side of the server's API (``/api/v1/``), over one requests session.

Errors come back as :class:`ServerError` with the server's own message (its JSON ``error``
object) and its ``Retry-After``, or as its subclasses for the cases a volunteer must act on:
:class:`AuthError` (wrong password, revoked or unknown token) and :class:`UpgradeRequired` (the run
does not take this client's version or build). Connection problems stay requests' exceptions; the
caller decides to wait and try again. Requests name the client's version and build
(:mod:`client.build`). Every answer is read within bounds (:mod:`client.contribute.bounded`): one
longer than it announced, or than the limit of a download, raises :class:`TooLarge`, one of
requests' exceptions.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Callable
from dataclasses import dataclass

import requests

from client.build import BUILD
from client.contribute.bounded import DEFAULT_MAX_DOWNLOAD, BoundedSession, bound
from client.contribute.outbox import REJECTED, Entry, Outcome, outcome_of_status
from client.contribute.retry import retry_after_seconds
from common.protocol import API_PREFIX, CLIENT_VERSION, TASK_KINDS


class ServerError(Exception):
    """The server refused a request; ``status``, ``code`` and the server's ``message``;
    ``retry_after``: the seconds its ``Retry-After`` asked to wait (None when it said nothing)."""

    def __init__(self, status: int, code: str, message: str, url: str, retry_after: float | None = None) -> None:
        super().__init__(f"{url}: {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.url = url
        self.retry_after = retry_after

    @classmethod
    def of(cls, response: requests.Response) -> ServerError:
        """The refusal in this answer (>= 400), as the subclass a volunteer must act on if it is one."""
        code, message = error_message(response)
        kind = cls
        if response.status_code in (401, 403):
            kind = AuthError
        elif response.status_code == 426:
            kind = UpgradeRequired
        return kind(
            response.status_code, code, message, response.url, retry_after_seconds(response.headers.get("Retry-After"))
        )


class AuthError(ServerError):
    """Wrong username or password, or a token the server does not take (any more)."""


class UpgradeRequired(ServerError):
    """The run does not take this client's version or build: another client is needed."""


@dataclass(frozen=True)
class Login:
    token: str
    username: str
    name: str


def error_message(response: requests.Response) -> tuple[str, str]:
    """(code, message) from the server's JSON error, or the status line for anything else."""
    try:
        error = response.json()["error"]
        return str(error.get("code", "")), str(error.get("message", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        text = response.text.strip().splitlines()[0][:200] if response.text.strip() else ""
        return "", text or response.reason or ""


class ProxiedSession(BoundedSession):
    """A session whose every request goes through ``proxy`` (an http:// or https:// URL), ahead of
    the HTTP_PROXY and HTTPS_PROXY of the environment, which requests would otherwise put first;
    without one, the environment's proxies as requests uses them. Its answers are read within
    bounds, ``max_download`` bytes at most (:class:`BoundedSession`)."""

    def __init__(self, proxy: str | None = None, max_download: int = DEFAULT_MAX_DOWNLOAD) -> None:
        super().__init__(max_download)
        self.proxy = proxy

    def merge_environment_settings(self, url, proxies, stream, verify, cert):
        settings = super().merge_environment_settings(url, proxies, stream, verify, cert)
        if self.proxy:
            settings["proxies"] = {"http": self.proxy, "https": self.proxy}
        return settings


class ServerClient:
    """One server, one token (None until :meth:`login`)."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        instance_id: str = "sente-client",
        session: requests.Session | None = None,
        timeout: float = 30.0,
        proxy: str | None = None,
        max_download: int = DEFAULT_MAX_DOWNLOAD,
    ) -> None:
        """``max_download``: the most bytes any answer may bring (the volunteer's --max-download-mb)."""
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"server {base_url!r}: expected an http:// or https:// address")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.instance_id = instance_id
        self.machine: Callable[[], dict] | None = None  # what task requests say of the machine (the worker's)
        self.session = session or ProxiedSession(proxy, max_download)
        self.session.headers["User-Agent"] = (
            f"sente-client/{CLIENT_VERSION} (build {BUILD}; Python {platform.python_version()})"
        )
        self.timeout = timeout

    def url(self, path: str) -> str:
        return self.base_url + API_PREFIX + path

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Token {self.token}"} if self.token else {}

    def _check(self, response: requests.Response) -> requests.Response:
        if response.status_code < 400:
            return response
        raise ServerError.of(response)

    # --- the calls --------------------------------------------------------------------------------
    def login(self, username: str, password: str, token_name: str) -> Login:
        """Exchange a username and password for a new client token (kept as self.token)."""
        r = self._check(
            self.session.post(
                self.url("auth/token/"),
                timeout=self.timeout,
                json={"username": username, "password": password, "name": token_name},
            )
        )
        body = r.json()
        self.token = body["token"]
        return Login(token=body["token"], username=body["username"], name=body["name"])

    def me(self) -> dict:
        return self._check(self.session.get(self.url("me/"), headers=self._headers(), timeout=self.timeout)).json()

    def task(self, games: int = 1, kinds: tuple[str, ...] = TASK_KINDS) -> dict:
        """A new task for up to `games` games of the given kinds (the request names this client's
        version and build, which the run may not take: UpgradeRequired), and what ``machine()``
        says of the machine and device, for the account's figures."""
        body: dict = {
            "client_version": CLIENT_VERSION,
            "client_build": BUILD,
            "client_instance_id": self.instance_id,
            "kinds": list(kinds),
            "games": games,
        }
        if self.machine is not None:
            body["machine"] = self.machine()
        r = self.session.post(self.url("tasks/"), headers=self._headers(), timeout=self.timeout, json=body)
        return self._check(r).json()

    def release(self, games: dict[str, int]) -> dict:
        """Tell the server the games it will get of these tasks (task id -> games in all, fewer than
        the task's): the rest are given up. The server's answer: ``given_up``, ``tasks``, ``unknown``."""
        r = self.session.patch(
            self.url("tasks/"),
            headers=self._headers(),
            timeout=self.timeout,
            json={"tasks": [{"id": task, "games": n} for task, n in games.items()]},
        )
        return self._check(r).json()

    def current_run(self) -> dict:
        """The run that hands out work: its name, status, the client versions and builds it takes,
        its settings version, its self-play network and the most games a task may have."""
        return self._check(
            self.session.get(self.url("runs/current/"), headers=self._headers(), timeout=self.timeout)
        ).json()

    def newest_network(self, run: str) -> dict | None:
        """The run's newest network that may still be played (a candidate, one playing its gating
        games, or an accepted one), as a task names a network; None if there is none."""
        r = self._check(
            self.session.get(self.url("networks/"), headers=self._headers(), timeout=self.timeout, params={"run": run})
        )
        for network in r.json().get("results", []):
            if network.get("state") in ("candidate", "rating", "accepted"):
                return {
                    "name": network["name"],
                    "is_random": network.get("is_random", False),
                    "url": network.get("file_url"),
                    "sha256": network.get("sha256") or None,
                    "bytes": network.get("size_bytes") or 0,
                }
        return None

    def network_canary(self, name: str) -> bytes | None:
        """The network's reference outputs on the canary positions as the server computed them (npz
        bytes, checked against the sha256 it gave), or None while it has none or has them only for
        another canary than this client's."""
        from common import canary

        info = (
            self._check(self.session.get(self.url(f"networks/{name}/"), headers=self._headers(), timeout=self.timeout))
            .json()
            .get("canary")
        )
        if not info or info.get("fingerprint") != canary.fingerprint():
            return None
        size = info.get("bytes")
        if type(size) is not int or size < 0:
            raise ValueError(f"the canary reference of network {name}: bytes {size!r} is not a size")
        with self.session.get(info["url"], headers=self._headers(), timeout=self.timeout, stream=True) as r:
            self._check(r)
            bound(r, size, "the canary reference's size")
            content = r.content
        if hashlib.sha256(content).hexdigest() != info.get("sha256"):
            raise ValueError(f"the canary reference of network {name} arrived damaged (its sha256 differs)")
        return content

    def upload(self, entry: Entry) -> Outcome:
        """Send one outbox entry; the server's answer as an Outcome (connection errors raise). A 426
        for a game an earlier build of the client played is that game's refusal (kept aside), not
        this client's: the run takes this build, or the task requests would say so."""
        try:
            files = {"sgf": ("game.sgf", entry.sgf.read_bytes(), "application/x-go-sgf")}
            npz = entry.npz
            if npz is not None:
                files["npz"] = ("game.npz", npz.read_bytes(), "application/octet-stream")
        except OSError as e:  # the disk's trouble, not the server's: the entry is kept aside
            return Outcome(REJECTED, f"the outbox entry cannot be read: {e}")
        r = self.session.post(
            self.url(f"games/{entry.kind}/"),
            headers=self._headers(),
            timeout=self.timeout,
            data={"task": entry.task, "metadata": entry.metadata},
            files=files,
        )
        if r.status_code < 400:
            return outcome_of_status(r.status_code, json.dumps(r.json()) if r.content else "")
        _, message = error_message(r)
        if r.status_code == 426 and entry.build and entry.build != BUILD:
            return Outcome(REJECTED, f"426: played by client build {entry.build}: {message}", status=426)
        return outcome_of_status(r.status_code, message, r.headers.get("Retry-After"))
