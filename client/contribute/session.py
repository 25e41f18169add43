"""The volunteer's session with the server: logging in for a client token (kept in the settings
file, never the password), logging in again when the server refuses a kept token and the password
can be had, and the checks at start that the server is reachable, takes the token and runs a run
that takes this client."""

from __future__ import annotations

import getpass
import logging
import os
import shlex
import socket
import sys
from dataclasses import replace
from pathlib import Path

import requests

from client.build import BUILD
from client.contribute import config as client_config
from client.contribute.exits import EXIT_AUTH, EXIT_FAILED, EXIT_UNREACHABLE, EXIT_UPGRADE, EXIT_USAGE, Stop
from client.contribute.outbox import describe_error
from client.contribute.retry import patiently
from client.contribute.server import AuthError, ServerClient, ServerError
from common.protocol import CLIENT_VERSION, parse_version

log = logging.getLogger("client.contribute")


class Session:
    """The client's account on its server. ``config`` is the settings in force (file, environment
    and flags), ``stored`` the settings file as it is; logging in updates both."""

    def __init__(
        self,
        config: client_config.ClientConfig,
        stored: client_config.ClientConfig,
        config_path: Path,
        config_flag: Path | None,
        username_flag: str | None,
        password_stdin: bool,
    ) -> None:
        self.config = config
        self.stored = stored
        self.config_path = config_path
        self._config_flag = config_flag
        self._username_flag = username_flag
        self._password_stdin = password_stdin
        if not config.server:
            raise Stop(
                EXIT_USAGE,
                "no server: give --server URL and --username NAME the first time (both are kept for later starts)",
            )
        self.server_url: str = config.server  # logging in keeps it: every later config has this server
        self.username = config.username or "?"  # the account's name, as the server says once signed in
        self.password_read = False
        self.upgrade: str | None = None  # the server's word of a newer client release, and how to get it

    def sign_in(self) -> ServerClient:
        """A client of the server, checked: logged in when need be, the token taken (a refused one
        replaced when the password can be had), and the server's run taking this client."""
        self._login_if_needed()
        cfg = self.config
        if cfg.instance_id is None:  # a token from the environment, no settings file yet
            client_config.save(replace(self.stored, server=cfg.server, username=cfg.username), self.config_path)
            self.stored = client_config.read_file(self.config_path)
            self.config = replace(cfg, instance_id=self.stored.instance_id)
        server, me = self._signed_in()
        self.username = me.get("username", self.config.username or "?")
        self._check_run(server)
        return server

    def login_again(self) -> str:
        """What to do about a refused token, as a command that does it."""
        if _token_from_env():
            return (
                f"The token comes from {client_config.ENV['token']}: make a new one on the server's token page, "
                "or unset the variable and log in with --username NAME"
            )
        command = ["python", "-m", "client", "contribute"]
        if self._config_flag:
            command += ["--config", str(self._config_flag)]
        command += ["--username", self.config.username or "NAME"]
        return (
            f"Log in again: {shlex.join(command)} (it asks for the password; add --password-stdin to give it on stdin)"
        )

    def _login_if_needed(self) -> None:
        """Log in when asked to (--username given), for another server than the kept one, or
        without a token; a token from the environment is used as it is."""
        cfg = self.config
        if _token_from_env():
            return
        if cfg.token and not self._username_flag and cfg.server == self.stored.server:
            return
        self._login()

    def _can_log_in(self) -> bool:
        """Can a refused kept token be replaced now: a user to log in as and a password to be had?"""
        return (
            not _token_from_env()
            and bool(self.config.username)
            and (self._password_stdin or (sys.stdin is not None and sys.stdin.isatty()))
        )

    def _login(self) -> None:
        cfg = self.config
        username = cfg.username
        if not username:
            raise Stop(EXIT_USAGE, f"no client token for {cfg.server}: give --username NAME to log in once")
        password = self._password(username)
        server = ServerClient(
            self.server_url,
            instance_id=cfg.instance_id or "sente-client",
            proxy=cfg.proxy,
            max_download=cfg.max_download(),
        )
        try:
            login = patiently(lambda: server.login(username, password, f"client on {socket.gethostname()}"[:100]))
        except AuthError as e:
            raise Stop(
                EXIT_AUTH,
                f"the server at {cfg.server} did not accept user {cfg.username!r} with this password ({e.message})",
            ) from None
        except ServerError as e:
            raise Stop(EXIT_FAILED, f"logging in at {cfg.server} failed: {e}") from None
        except requests.RequestException as e:
            raise _unreachable(cfg.server, e, "; check the address and the network connection") from None
        kept = replace(
            self.stored,
            server=cfg.server,
            username=login.username,
            token=login.token,
            instance_id=self.stored.instance_id,
        )
        path = client_config.save(kept, self.config_path)
        self.stored = client_config.read_file(path)
        self.config = replace(cfg, username=login.username, token=login.token, instance_id=self.stored.instance_id)
        print(
            f"logged in to {cfg.server} as {login.username}; the client token is kept in {path} (the password is not)",
            flush=True,
        )

    def _password(self, username: str) -> str:
        if self._password_stdin:
            self.password_read = True
            line = sys.stdin.readline()
            if not line:
                raise Stop(EXIT_USAGE, "--password-stdin: stdin ended before a password line")
            return line.rstrip("\r\n")
        if not sys.stdin.isatty():
            raise Stop(
                EXIT_USAGE,
                f"logging in as {username} needs the password: run the command in a terminal "
                "once, or give it on stdin with --password-stdin",
            )
        return getpass.getpass(f"password for {username} at {self.server_url}: ")

    def _signed_in(self) -> tuple[ServerClient, dict]:
        """A client of the server that took the token (logging in again if it refused the kept one
        and can), and the account the server says it is."""
        cfg = self.config
        server = self._client()
        try:
            try:
                return server, patiently(server.me)
            except AuthError as e:
                if not self._can_log_in():
                    raise
                print(
                    f"the server at {cfg.server} refused the client token kept for {cfg.username} ({e.message}); "
                    "logging in again",
                    flush=True,
                )
                self._login()
                cfg = self.config
                server = self._client()
                return server, patiently(server.me)
        except AuthError as e:
            raise Stop(
                EXIT_AUTH,
                f"the server at {cfg.server} refused the client token kept for "
                f"{cfg.username or 'this user'} ({e.message}); it may have been revoked. "
                f"{self.login_again()}",
            ) from None
        except ServerError as e:
            raise Stop(EXIT_FAILED, f"the server at {cfg.server} answered {e}") from None
        except requests.RequestException as e:
            raise _unreachable(
                cfg.server, e, "; check the address and the network connection, then start again"
            ) from None

    def _client(self) -> ServerClient:
        """A client of the server with the kept token (none: the server refuses it)."""
        instance_id = self.config.instance_id
        assert instance_id is not None, "sign_in has given the installation its id"
        return ServerClient(
            self.server_url,
            self.config.token,
            instance_id=instance_id,
            proxy=self.config.proxy,
            max_download=self.config.max_download(),
        )

    def _check_run(self, server: ServerClient) -> None:
        """Ends the command when the server's run does not take this client; a server without a run
        yet is waited for."""
        try:
            current = patiently(server.current_run)
            refusal = not_taken(current)
            if refusal is not None:
                raise Stop(EXIT_UPGRADE, refusal)
            self.upgrade = newer_release(current)
            if self.upgrade is not None:
                log.warning("%s", self.upgrade)
            log.info("run %s, network %s", current.get("run"), (current.get("network") or {}).get("name"))
        except ServerError as e:
            log.warning("the server has no run to work for yet (%s); the client waits for one", e.message)
        except requests.RequestException as e:
            raise _unreachable(self.config.server, e) from None


def _unreachable(server: str | None, error: requests.RequestException, advice: str = "") -> Stop:
    """The end of a command that could not reach the server: what failed, and ``advice``."""
    return Stop(EXIT_UNREACHABLE, f"cannot reach the server at {server} ({describe_error(error)}){advice}")


def _token_from_env() -> bool:
    return bool(os.environ.get(client_config.ENV["token"]))


def newer_release(current: dict) -> str | None:
    """What to say when the server announces a client release newer than this one, with the command
    that upgrades to it (None: this one is the newest, or the server names none, or a bad one)."""
    newest, command = current.get("newest_client_version"), current.get("client_upgrade")
    try:
        if not isinstance(newest, str) or parse_version(newest) <= parse_version(CLIENT_VERSION):
            return None
    except ValueError:
        return None
    how = f": {command}" if isinstance(command, str) and command.strip() else ""
    return f"client {newest} is out (this is {CLIENT_VERSION}); upgrade{how}"


def not_taken(current: dict) -> str | None:
    """Why the server's current run does not take this client (None: it does), in the words of the
    server's own refusal of a task request."""
    run, least, most = current.get("run"), current.get("min_client_version"), current.get("max_client_version")
    builds = current.get("client_builds") or []
    mine = parse_version(CLIENT_VERSION)
    if least and mine < parse_version(least):
        return (
            f"this client is version {CLIENT_VERSION}, and the server's run {run} needs {least} or newer: "
            "please upgrade the client"
        )
    if most and mine > parse_version(most):
        return (
            f"this client is version {CLIENT_VERSION}, newer than the server's run {run} takes (versions "
            f"{least} to {most}): please install one of those"
        )
    if builds and BUILD not in builds:
        return (
            f"this client is version {CLIENT_VERSION}, build {BUILD}, which the server's run {run} does not take "
            f"(builds {', '.join(builds)}): please upgrade the client to the release the project names"
        )
    return None
