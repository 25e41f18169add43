"""The production recipe in deploy/, exercised as far as one machine allows: nginx accepts its site
configuration, systemd accepts the units, docker compose accepts the compose file, the backup script
backs up the test database and files, and the smoke script passes against the server under gunicorn."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from tests.e2e.needs import missing
from tests.server import helpers
from tests.server.live import LiveServer, free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _need(program: str, package: str) -> str:
    path = shutil.which(program) or (f"/usr/sbin/{program}" if Path(f"/usr/sbin/{program}").exists() else None)
    if path is None:
        missing(program, f"apt-get install {package} (.ci/run installs it)")
    return path


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost (requests checks it: verify=cert)."""
    _need("openssl", "openssl")
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "fullchain.pem", folder / "privkey.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class Nginx:
    """nginx running deploy/nginx/<site> as written but for its paths and ports, unprivileged (its own
    prefix, pid, logs and temporary folders under ``folder``; ports from the free ones), in front of
    ``upstream``: the site's files are copied with the deployment's paths (certificates, storage and
    static folders, snippets, logs, and any text of ``replace``) replaced by the test's, and every
    listen moved to 127.0.0.1."""

    def __init__(
        self,
        site: str,
        folder: Path,
        upstream: str,
        files: Path,
        static: Path,
        cert: Path,
        key: Path,
        start: bool = True,
        replace: dict[str, str] | None = None,
    ) -> None:
        self.nginx = _need("nginx", "nginx")
        self.folder = folder
        self.http, self.https = free_port(), free_port()
        conf = folder / "conf"
        for sub in ("conf", "logs", "temp", "acme"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        paths = {
            "/etc/letsencrypt/live/go.example.org/fullchain.pem": str(cert),
            "/etc/letsencrypt/live/go.example.org/privkey.pem": str(key),
            "/etc/nginx/tls/fullchain.pem": str(cert),
            "/etc/nginx/tls/privkey.pem": str(key),
            "/etc/nginx/snippets/": f"{conf}/",
            "/etc/nginx/sente/": f"{conf}/",
            "/var/log/nginx/": f"{folder}/logs/",
            "/var/www/letsencrypt": f"{folder}/acme",
            "/srv/sente/data/files/": f"{files}/",
            "/data/files/": f"{files}/",
            "/srv/sente/data/static/": f"{static}/",
            "/srv/static/": f"{static}/",
            "server 127.0.0.1:8000": f"server {upstream}",
            "server web:8000": f"server {upstream}",
            **(replace or {}),
        }
        pattern = re.compile("|".join(re.escape(k) for k in sorted(paths, key=len, reverse=True)))
        for source in (DEPLOY / "nginx").glob("*.conf"):
            text = pattern.sub(lambda m: paths[m.group(0)], source.read_text())  # one pass: no path replaced twice
            text = re.sub(r"\n\s*listen \[::\]:\d+[^;]*;", "", text)
            text = re.sub(r"listen 80;", f"listen 127.0.0.1:{self.http};", text)
            text = re.sub(r"listen 443 ", f"listen 127.0.0.1:{self.https} ", text)
            for listen in re.findall(r"listen ([^;]*);", text):  # nothing binds the machine's own ports
                assert listen.split()[0] in (f"127.0.0.1:{self.http}", f"127.0.0.1:{self.https}"), (source, listen)
            (conf / source.name).write_text(text)
        temp = folder / "temp"
        user = "user root;\n" if os.geteuid() == 0 else ""  # as root, workers would drop to nobody: no access to tmp
        mime = "include /etc/nginx/mime.types;\n  " if Path("/etc/nginx/mime.types").exists() else ""
        self.main = folder / "nginx.conf"
        self.main.write_text(
            f"pid {folder}/nginx.pid;\nerror_log {folder}/logs/error.log;\ndaemon off;\n{user}worker_processes 1;\n"
            f"events {{ worker_connections 64; }}\n"
            f"http {{\n  {mime}default_type application/octet-stream;\n  access_log {folder}/logs/access.log;\n"
            + "".join(
                f"  {kind}_temp_path {temp}/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
            )
            + f"  include {conf}/{site};\n}}\n"
        )
        self.url = (
            f"https://127.0.0.1:{self.https}" if "ssl" in (conf / site).read_text() else f"http://127.0.0.1:{self.http}"
        )
        self.process = None
        if start:
            self.start()

    def command(self, *args: str) -> list[str]:
        return [self.nginx, "-e", f"{self.folder}/logs/error.log", "-p", str(self.folder), "-c", str(self.main), *args]

    def start(self) -> None:
        self.process = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port = self.https if self.url.startswith("https") else self.http
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"nginx exited with {self.process.returncode}: {self.process.stderr.read()!r}\n"
                    + (self.folder / "logs" / "error.log").read_text(errors="replace")[-3000:]
                )
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("nginx did not listen within 20 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def test_nginx_accepts_the_site(tmp_path):
    cert, key = _certificate(tmp_path / "tls")
    for site in ("sente.conf", "compose.conf", "compose-http.conf"):
        front = Nginx(
            site, tmp_path / site, "127.0.0.1:8000", tmp_path / "files", tmp_path / "static", cert, key, start=False
        )
        done = subprocess.run(front.command("-t", "-q"), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_nginx_sends_network_files_with_ranges_to_resuming_clients(tmp_path):
    """The real nginx in front of gunicorn, with each of its sites: the application hands network files
    to nginx (X-Accel-Redirect), which sends them with the application's ETag and headers (each once),
    byte ranges (also under If-Range on the sha256, as earlier clients send it), and a client
    resuming a broken download gets only the rest. The links a task gives lead back through nginx."""
    from django.contrib.auth.models import Group
    from django.db import connection

    from client.contribute.netcache import NetworkCache, NetworkRef
    from server.accounts.models import ClientToken, User
    from server.networks.models import Network
    from server.platform.processes import database_url
    from server.ratings.promotion import staff_decision
    from server.runs.models import create_run

    _need("nginx", "nginx")
    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    data = tmp_path / "data"
    data.mkdir()
    live = LiveServer(
        database_url(connection.settings_dict), data, env={"SENTE_NETWORK_FILE_ACCEL_PREFIX": "/_network_files"}
    )
    fronts: list[Nginx] = []
    try:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SENTE_")}, "SENTE_DATA_DIR": str(data)}
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--no-input", "--verbosity", "0"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        cert, key = _certificate(tmp_path / "tls")
        for site in ("sente.conf", "compose.conf", "compose-http.conf"):
            fronts.append(
                Nginx(site, tmp_path / site, f"127.0.0.1:{live.port}", data / "files", data / "static", cert, key)
            )
        trainer = User.objects.create_user("gpu-box", "trainer@example.org", "another long password")
        trainer.groups.add(Group.objects.get(name="trainers"))
        _, trainer_token = ClientToken.issue(trainer, "gpu")
        user = User.objects.create_user("alice", "alice@example.org", "correct horse battery")
        _, token = ClientToken.issue(user, "smoke")
        network = helpers.network_file("test-net1")
        sha256 = hashlib.sha256(network).hexdigest()
        upload = requests.post(
            fronts[0].url + "/api/v1/networks/",
            headers={"Authorization": f"Token {trainer_token}"},
            data={"name": "test-net1", "run": helpers.RUN, "parent": helpers.RANDOM_NET, "sha256": sha256},
            files={"file": ("test-net1.safetensors", network)},
            verify=cert,
            timeout=60,
        )
        assert upload.status_code == 201, upload.text
        staff_decision(Network.objects.get(name="test-net1"), "accept", note="for the test")

        for front in fronts:
            session = requests.Session()
            session.trust_env = False  # (REQUESTS_CA_BUNDLE in the environment would win over verify)
            session.verify = str(cert)
            task = session.post(
                front.url + "/api/v1/tasks/",
                headers={"Authorization": f"Token {token}"},
                json={
                    "client_version": "0.1.0",
                    "client_instance_id": "nginx-test",
                    "games": 1,
                    "kinds": ["selfplay"],
                },  # (else a rating game may come)
                timeout=30,
            )
            assert task.status_code == 201, task.text
            ref = task.json()["network"]
            assert ref["url"] == f"{front.url}/api/v1/networks/test-net1/file", front.url  # back through nginx

            whole = session.get(ref["url"], timeout=30)
            assert whole.status_code == 200 and whole.content == network
            headers = whole.raw.headers  # as sent, a repeated header not yet joined
            assert "X-Accel-Redirect" not in headers
            for name, value in (
                ("ETag", f'"{sha256}"'),
                ("Accept-Ranges", "bytes"),
                ("Cache-Control", "public, max-age=31536000, immutable"),
                ("Content-Disposition", 'attachment; filename="test-net1.safetensors"'),
            ):
                assert headers.getlist(name) == [value], (front.url, name, headers.getlist(name))
            part = session.get(ref["url"], headers={"Range": "bytes=100-299"}, timeout=30)
            assert part.status_code == 206 and part.content == network[100:300]
            assert part.headers["Content-Range"] == f"bytes 100-299/{len(network)}"
            older = session.get(ref["url"], headers={"Range": "bytes=1000-", "If-Range": f'"{sha256}"'}, timeout=30)
            assert older.status_code == 206 and older.content == network[1000:]

            cache = NetworkCache(tmp_path / "cache" / front.folder.name, session=session)
            kept = len(network) // 3  # a download broken off after a third
            (cache.directory / ".test-net1.part").write_bytes(network[:kept])
            path = cache.get(NetworkRef.from_task(ref))
            assert path.read_bytes() == network
            assert cache.downloaded_bytes == len(network) - kept  # only the rest came

        smoke = subprocess.run(
            [sys.executable, str(DEPLOY / "smoke.py"), fronts[0].url, "--token", token],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "REQUESTS_CA_BUNDLE": str(cert)},
        )
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr
        assert "ok   network download: test-net1" in smoke.stdout
    finally:
        for front in fronts:
            front.stop()
        live.stop()


def _post_headers_first(
    front: Nginx, cert: Path, path: str, length: int, seconds: float, headers: dict[str, str] | None = None
) -> tuple[int, int]:
    """POST to ``path`` through ``front`` declaring a body of ``length`` bytes (with ``headers`` too),
    sending only the headers, then the body a slice at a time, and only while no answer has come: (the
    answer's status, the body's bytes sent before it came); status 0 when none came within ``seconds``."""
    import select
    import ssl

    host, port = front.url.split("//")[1].split(":")
    raw = socket.create_connection((host, int(port)), timeout=2)
    if front.url.startswith("https"):
        raw = ssl.create_default_context(cafile=str(cert)).wrap_socket(raw, server_hostname=host)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: multipart/form-data; boundary=x\r\n"
        f"Content-Length: {length}\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        + "\r\n"
    )
    sent = 0
    piece = b"x" * (64 * 1024)
    deadline = time.monotonic() + seconds
    answer = b""
    with raw:
        raw.sendall(head.encode())
        while time.monotonic() < deadline:
            if select.select([raw], [], [], 0.5)[0]:
                try:
                    answer = raw.recv(4096)
                except TimeoutError:  # what came was TLS's own (a session ticket), no answer
                    continue
                break
            if sent < length and time.monotonic() > deadline - seconds / 2:  # the headers alone first
                try:
                    raw.sendall(piece[: length - sent])
                except OSError:  # (a timeout) nginx takes no more
                    break
                sent += min(len(piece), length - sent)
    return (int(answer[9:12]) if answer.startswith(b"HTTP/1.1 ") else 0), sent


def _web_session(url: str, username: str, password: str) -> str:
    """The Cookie header of a browser signed in on the website at ``url`` (its session and CSRF
    cookies), checked to be signed in."""
    browser = requests.Session()
    browser.trust_env = False
    browser.get(url + "/accounts/login/", timeout=30).raise_for_status()
    token = browser.cookies["csrftoken"]
    form = {"username": username, "password": password, "csrfmiddlewaretoken": token}
    done = browser.post(url + "/accounts/login/", data=form, headers={"Origin": url}, timeout=30)
    assert done.ok and "sessionid" in browser.cookies, (done.status_code, done.text[:500])
    me = browser.get(url + "/api/v1/me/", timeout=30)
    assert me.status_code == 200 and me.json()["username"] == username, me.text
    return f"sessionid={browser.cookies['sessionid']}; csrftoken={token}"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_nginx_refuses_an_anonymous_network_upload_without_taking_its_body(tmp_path):
    """Network uploads may be large (trainers'), so nginx passes their bodies on as they come instead
    of buffering them: an anonymous 100 MB upload, through each site, is refused by the application
    from its headers alone, before any of the body is sent, and nginx's folder for request bodies
    stays empty. So is one from a signed-in web session (sign-up is free) with its session cookie, a
    CSRF cookie and a matching Origin, whose CSRF check would otherwise parse the whole body: uploads
    take client tokens only. Everywhere else the small body limit holds: nginx refuses a 10 MB game
    upload from its declared length. The export's own location passes the streamed archive on."""
    from django.db import connection

    from server.accounts.models import User
    from server.platform.processes import database_url
    from server.runs.models import create_run

    _need("nginx", "nginx")
    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    User.objects.create_user("mallory", "mallory@example.org", "a long enough password")
    data = tmp_path / "data"
    data.mkdir()
    cert, key = _certificate(tmp_path / "tls")
    fronts: list[Nginx] = []
    with LiveServer(database_url(connection.settings_dict), data) as live:
        cookies = _web_session(live.url, "mallory", "a long enough password")
        try:
            for site in ("sente.conf", "compose.conf", "compose-http.conf"):
                front = Nginx(
                    site, tmp_path / site, f"127.0.0.1:{live.port}", data / "files", data / "static", cert, key
                )
                fronts.append(front)
                status, sent = _post_headers_first(front, cert, "/api/v1/networks/", 100 * 1024 * 1024, 20)
                assert status == 401 and sent == 0, (site, status, sent)
                session = {"Cookie": cookies, "Origin": front.url}  # as the site's own page would post
                status, sent = _post_headers_first(front, cert, "/api/v1/networks/", 100 * 1024 * 1024, 20, session)
                assert status == 401 and sent == 0, (site, status, sent)
                bodies = front.folder / "temp" / "client_body"
                assert not [p for p in bodies.rglob("*") if p.is_file()], (site, list(bodies.rglob("*")))
                status, sent = _post_headers_first(front, cert, "/api/v1/games/training/", 10 * 1024 * 1024, 20)
                assert status == 413 and sent == 0, (site, status, sent)
                export = requests.get(front.url + "/api/v1/games/export/", verify=str(cert), timeout=30)
                assert export.status_code == 200 and export.headers["Content-Type"] == "application/gzip", site
        finally:
            for front in fronts:
                front.stop()


class HeldUpstream:
    """An upstream for nginx that takes requests and answers none until :meth:`release`: the headers
    of each request it got, in :attr:`seen` (names in lower case)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.seen: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            head = b""
            while b"\r\n\r\n" not in head:
                piece = connection.recv(4096)
                if not piece:
                    return
                head += piece
            lines = head.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
            with self._lock:
                release = self._release
                self.seen.append({k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)})
            release.wait(60)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 20
        while len(self.seen) < count:
            assert time.monotonic() < deadline, f"the upstream got {len(self.seen)} requests, not {count}"
            time.sleep(0.05)

    def release(self) -> None:
        """Answer every request taken so far (later ones wait for the next release)."""
        with self._lock:
            release, self._release = self._release, threading.Event()
        release.set()

    def close(self) -> None:
        self.release()
        self.listener.close()


def _ask(front: Nginx, cert: Path, path: str, headers: dict[str, str]) -> socket.socket:
    """A GET of ``path`` through ``front`` with ``headers``, sent; its answer not read yet."""
    import ssl

    host, port = front.url.split("//")[1].split(":")
    raw = socket.create_connection((host, int(port)), timeout=20)
    if front.url.startswith("https"):
        raw = ssl.create_default_context(cafile=str(cert)).wrap_socket(raw, server_hostname=host)
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    raw.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n{lines}\r\n".encode())
    return raw


def _status(answer: socket.socket, seconds: float = 20) -> int:
    """The status of the answer on ``answer``, which is then closed; 0 when none came within ``seconds``."""
    answer.settimeout(seconds)
    with answer:
        head = b""
        try:
            while len(head) < 12:
                piece = answer.recv(4096)
                if not piece:
                    break
                head += piece
        except TimeoutError:
            return 0
    assert head.startswith(b"HTTP/1.1 "), head
    return int(head[9:12])


def _trusted_proxies(site: str) -> list[str]:
    return re.findall(r"^\s*set_real_ip_from\s+([^;\s]+);", (DEPLOY / "nginx" / site).read_text(), re.M)


EXPORT_PATH = "/api/v1/games/export/"


def test_nginx_counts_a_visitors_exports_whatever_x_forwarded_for_says(tmp_path):
    """nginx sends two exports at once to one visitor (limit_conn), and a visitor cannot pass for
    others by writing X-Forwarded-For: each site counts a visitor who comes straight to it by the
    connection's address, and passes that address on to the application as the client's (so the
    throttles' SENTE_NUM_PROXIES=1 finds it). compose-http.conf believes X-Forwarded-For and
    X-Forwarded-Proto only from the proxy in front (set_real_ip_from), and of X-Forwarded-For only the
    address that proxy wrote: with the test standing in for that proxy, a visitor varying what it
    wrote before is still one visitor, another visitor is another."""
    cert, key = _certificate(tmp_path / "tls")
    upstream = HeldUpstream()
    fronts: list[Nginx] = []
    try:
        for site in ("sente.conf", "compose.conf", "compose-http.conf"):
            front = Nginx(site, tmp_path / site, upstream.address, tmp_path / "files", tmp_path / "static", cert, key)
            fronts.append(front)
            seen = len(upstream.seen)
            held = [
                _ask(front, cert, EXPORT_PATH, {"X-Forwarded-For": f"192.0.2.{n}", "X-Forwarded-Proto": "https"})
                for n in (1, 2)
            ]
            upstream.wait_for(seen + 2)
            third = _ask(front, cert, EXPORT_PATH, {"X-Forwarded-For": "192.0.2.3"})
            assert _status(third) == 429, site
            for headers in upstream.seen[seen:]:
                assert headers["x-forwarded-for"].split(",")[-1].strip() == "127.0.0.1", (site, headers)
                if site == "compose-http.conf":  # its visitor's own word: not believed
                    assert headers["x-forwarded-proto"] == "http", headers
            upstream.release()
            assert [_status(answer) for answer in held] == [200, 200], site
            front.stop()

        # The test as the proxy in front of compose-http.conf (its network moved to 127.0.0.0/8).
        trusted = _trusted_proxies("compose-http.conf")
        assert trusted, "compose-http.conf names no proxy in front to believe"
        site = "compose-http.conf"
        front = Nginx(
            site,
            tmp_path / "behind-a-proxy",
            upstream.address,
            tmp_path / "files",
            tmp_path / "static",
            cert,
            key,
            replace={network: "127.0.0.0/8" for network in trusted},
        )
        fronts.append(front)
        seen = len(upstream.seen)
        visitor = "203.0.113.7"
        held = [
            _ask(front, cert, EXPORT_PATH, {"X-Forwarded-For": f"10.0.0.{n}, {visitor}", "X-Forwarded-Proto": "https"})
            for n in (1, 2)
        ]
        upstream.wait_for(seen + 2)
        assert _status(_ask(front, cert, EXPORT_PATH, {"X-Forwarded-For": f"10.0.0.3, {visitor}"})) == 429
        held.append(_ask(front, cert, EXPORT_PATH, {"X-Forwarded-For": "198.51.100.8"}))  # another visitor
        upstream.wait_for(seen + 3)
        got = upstream.seen[seen:]
        assert [h["x-forwarded-for"].split(",")[-1].strip() for h in got] == [visitor, visitor, "198.51.100.8"], got
        assert [h["x-forwarded-proto"] for h in got] == ["https", "https", "http"], got
        upstream.release()
        assert [_status(answer) for answer in held] == [200, 200, 200]
    finally:
        for front in fronts:
            front.stop()
        upstream.close()


def test_systemd_accepts_the_units(tmp_path):
    analyze = _need("systemd-analyze", "systemd")
    units = tmp_path / "units"
    units.mkdir()
    for unit in (DEPLOY / "systemd").iterdir():
        text = (
            unit.read_text()
            .replace("/srv/sente/app", str(ROOT))
            .replace("/etc/sente/sente.env", str(tmp_path / "sente.env"))
        )
        (units / unit.name).write_text(text)
    (units / "sente-trainer@main.service").symlink_to(units / "sente-trainer@.service")
    (tmp_path / "sente.env").write_text((DEPLOY / "sente.env.example").read_text())
    names = sorted(str(p) for p in units.iterdir() if p.name != "sente-trainer@.service")
    done = subprocess.run(
        [analyze, "verify", *names], capture_output=True, text=True, env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"}
    )
    problems = [line for line in done.stderr.splitlines() if str(units) in line or "sente" in line]
    assert done.returncode == 0 and not problems, done.stderr


def _compose_command() -> list[str]:
    compose = shutil.which("docker-compose")
    if compose:
        return [compose]
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    missing("docker compose", "apt-get install docker-compose (.ci/run installs it)")


def _env_file(path: Path) -> dict[str, str]:
    """The KEY=VALUE lines of an env file (comments and blank lines skipped)."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if line and not line.startswith("#"))


def _dockerfile_collectstatic() -> tuple[dict[str, str], list[str]]:
    """The environment and the command of the Dockerfile's collectstatic step (RUN VAR=... python ...)."""
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith("RUN ") and "collectstatic" in line)
    words = shlex.split(line.removeprefix("RUN ").split("&&")[0])
    env = dict(w.split("=", 1) for w in itertools.takewhile(lambda w: re.fullmatch(r"[A-Z_]+=.*", w), words))
    return env, words[len(env) :]


def test_docker_compose_makes_a_working_site(tmp_path):
    """docker compose accepts the compose file (with and without its plain-HTTP override), and what it
    says fits together: the database's password from the env file, TLS in nginx (or plain HTTP with the
    server told so), the static files where nginx serves them, the health check's script, the daily jobs."""
    import yaml

    command = _compose_command()
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy)
    env_file = copy / "sente.env"
    env_file.write_text((DEPLOY / "sente.env.example").read_text() + "POSTGRES_PASSWORD=3f9c2a77d1e04b6b\n")

    def config(*files: str, env: Path = env_file) -> subprocess.CompletedProcess:
        args = [a for f in files for a in ("-f", str(copy / f))]
        return subprocess.run([*command, "--env-file", str(env), *args, "config"], capture_output=True, text=True)

    done = config("docker-compose.yml")
    assert done.returncode == 0, done.stderr
    services = yaml.safe_load(done.stdout)["services"]
    assert set(services) >= {"db", "redis", "migrate", "web", "worker", "trainer", "nginx", "backup", "export"}
    assert services["db"]["environment"]["POSTGRES_PASSWORD"] == "3f9c2a77d1e04b6b"
    web = services["web"]
    assert web["environment"]["DATABASE_URL"] == "postgres://sente:3f9c2a77d1e04b6b@db:5432/sente"
    assert str(web["environment"]["SENTE_PRODUCTION"]) == "1" and "SENTE_PLAIN_HTTP" not in web["environment"]
    assert web["healthcheck"]["test"] == ["CMD", "python", "deploy/healthcheck.py"]
    assert services["backup"]["command"] == ["deploy/backup.sh"]
    assert services["backup"]["environment"]["SENTE_BACKUP_DIR"] == "/backups"
    assert "export_games" in " ".join(services["export"]["command"])
    for name in ("web", "worker", "trainer", "backup", "export"):  # the data volume's files by default
        assert services[name]["environment"]["STORAGE_URL"] == "file:///data/files", name
    s3 = copy / "s3.env"
    s3.write_text(env_file.read_text() + "SENTE_COMPOSE_STORAGE_URL=s3://sente-files/production\n")
    done = config("docker-compose.yml", env=s3)
    assert done.returncode == 0, done.stderr
    for name, service in yaml.safe_load(done.stdout)["services"].items():  # object storage, chosen in the env file
        if "STORAGE_URL" in service.get("environment", {}):
            assert service["environment"]["STORAGE_URL"] == "s3://sente-files/production", name

    # TLS in nginx: the site compose mounts listens on 443 with the mounted certificate.
    mounts = {v.split(":")[1]: v.split(":")[0] for v in services["nginx"]["volumes"]}
    assert Path(mounts["/etc/nginx/conf.d/default.conf"]).name == "compose.conf"
    site = (DEPLOY / "nginx" / "compose.conf").read_text()
    assert "listen 443 ssl" in site and "ssl_certificate /etc/nginx/tls/fullchain.pem;" in site
    assert Path(mounts["/etc/nginx/tls"]) == copy / "tls"
    # The static files: collected into SENTE_STATIC_ROOT of the server image, copied into nginx's image
    # at the same path, and served from there.
    static = web["environment"]["SENTE_STATIC_ROOT"]
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert f"SENTE_STATIC_ROOT={static}" in dockerfile
    assert f"COPY --from=server {static} {static}" in dockerfile
    assert services["nginx"]["build"]["target"] == "nginx"
    assert f"alias {static}/;" in (DEPLOY / "nginx" / "compose-locations.conf").read_text()

    done = config("docker-compose.yml", "docker-compose.http.yml")
    assert done.returncode == 0, done.stderr
    services = yaml.safe_load(done.stdout)["services"]
    for name in ("migrate", "web", "worker", "trainer", "export"):
        assert str(services[name]["environment"]["SENTE_PLAIN_HTTP"]) == "1", name
    mounts = {v.split(":")[1]: v.split(":")[0] for v in services["nginx"]["volumes"]}
    assert Path(mounts["/etc/nginx/conf.d/default.conf"]).name == "compose-http.conf"
    # nginx believes X-Forwarded-For from the compose network's subnet alone, the one compose makes.
    subnets = [c["subnet"] for c in yaml.safe_load(done.stdout)["networks"]["default"]["ipam"]["config"]]
    assert subnets and _trusted_proxies("compose-http.conf") == subnets
    assert f"{subnets[0]} 1;" in (DEPLOY / "nginx" / "compose-http.conf").read_text()  # its X-Forwarded-Proto too

    bare = copy / "bare.env"
    bare.write_text((DEPLOY / "sente.env.example").read_text())
    done = config("docker-compose.yml", env=bare)
    assert done.returncode != 0 and "set POSTGRES_PASSWORD" in done.stderr


class HealthcheckedServer(LiveServer):
    """The server, waited for with the compose file's health check (deploy/healthcheck.py) instead of a
    plain GET /healthz (which a production server answers with 400 or a redirect)."""

    def _wait(self, seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}:\n{self.log()}")
            done = subprocess.run(
                [sys.executable, str(DEPLOY / "healthcheck.py")],
                env=self._environment,
                capture_output=True,
                text=True,
                timeout=30,
            )
            if done.returncode == 0:
                return
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the health check did not pass within {seconds} s: {done.stderr}\n{self.log()}")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_images_production_settings_serve_pages(tmp_path):
    """The server as the image runs it: the Dockerfile's collectstatic step (its own environment:
    production's storage and its manifest) into a folder, then gunicorn with the env file's settings
    and the compose file's, passing the compose health check and serving the front page and its
    stylesheet (by its hashed name) to a visitor coming over https through the proxy."""
    from django.db import connection

    from server.platform.processes import database_url
    from server.runs.models import create_run

    build_env, build_command = _dockerfile_collectstatic()
    assert build_env.get("SENTE_PRODUCTION") == "1", build_env
    assert build_command[:3] == ["python", "manage.py", "collectstatic"]
    static = tmp_path / "static"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SENTE_", "DJANGO_"))}
    done = subprocess.run(
        [sys.executable, *build_command[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**base, **build_env, "SENTE_DATA_DIR": str(tmp_path / "build"), "SENTE_STATIC_ROOT": str(static)},
    )
    assert done.returncode == 0, done.stderr
    assert (static / "staticfiles.json").exists()

    import yaml

    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    example = _env_file(DEPLOY / "sente.env.example")
    env = {**example, **{k: str(v) for k, v in compose["services"]["web"]["environment"].items()}}
    host = example["ALLOWED_HOSTS"].split(",")[0]
    env.update(
        {
            "SECRET_KEY": "a-secret-of-the-test-" + "x" * 40,
            "SENTE_METRICS_TOKEN": "a-scrape-token-of-the-test",
            "SENTE_STATIC_ROOT": str(static),
            "SENTE_WORKERS": "1",
            "SENTE_FORWARDED_ALLOW_IPS": "127.0.0.1",
        }
    )
    for key in ("DATABASE_URL", "CACHE_URL", "SENTE_DATA_DIR", "STORAGE_URL", "SENTE_BIND", "SENTE_ACCESS_LOG"):
        env.pop(key)  # the test's database and folders, no Redis, a free port (LiveServer's)
    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    data = tmp_path / "data"
    data.mkdir()
    with HealthcheckedServer(database_url(connection.settings_dict), data, workers=1, env=env) as server:
        visitor = {"Host": host, "X-Forwarded-Proto": "https"}
        page = requests.get(server.url + "/", headers=visitor, timeout=30)
        assert page.status_code == 200, server.log()
        assert "Strict-Transport-Security" in page.headers
        css = re.search(r'href="(/static/[^"]+\.css)"', page.text).group(1)
        assert re.search(r"\.[0-9a-f]{12}\.css$", css), css  # the manifest's name
        sheet = requests.get(server.url + css, headers=visitor, timeout=30)
        assert sheet.status_code == 200 and sheet.headers["Content-Type"].startswith("text/css")
        # What the health check must not do: ask over plain http (redirected) or for another host.
        plain = requests.get(server.url + "/healthz", headers={"Host": host}, allow_redirects=False, timeout=30)
        assert plain.status_code == 301 and plain.headers["Location"].startswith("https://")
        assert (
            requests.get(server.url + "/healthz", headers={"X-Forwarded-Proto": "https"}, timeout=30).status_code == 400
        )


def test_production_refuses_the_example_secret_key_and_plain_http_turns_https_off(tmp_path):
    data = {"SENTE_DATA_DIR": str(tmp_path), "SENTE_PRODUCTION": "1", "ALLOWED_HOSTS": "go.example.org"}
    data.update(SENTE_PUBLIC_URL="https://go.example.org", SENTE_METRICS_TOKEN="a-scrape-token-of-the-test")
    example = _env_file(DEPLOY / "sente.env.example")["SECRET_KEY"]
    done = helpers.settings_in_a_process({**data, "SECRET_KEY": example}, "SECRET_KEY")
    assert done.returncode != 0 and f"SECRET_KEY is still the example's {example!r}" in done.stderr
    names = ("SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE")
    done = helpers.settings_in_a_process({**data, "SECRET_KEY": "s" * 50}, *names)
    assert done.returncode == 0 and done.stdout.split() == ["True", "31536000", "True", "True"], done.stderr
    done = helpers.settings_in_a_process({**data, "SECRET_KEY": "s" * 50, "SENTE_PLAIN_HTTP": "1"}, *names)
    assert done.returncode == 0 and done.stdout.split() == ["False", "0", "False", "False"], done.stderr


def test_object_storage_is_installed(tmp_path):
    """STORAGE_URL=s3://... works with what requirements.txt installs (django-storages and boto3)."""
    code = (
        "import django; django.setup(); from django.core.files.storage import storages; "
        "s = storages['default']; print(type(s).__name__, s.bucket_name, s.location, s.endpoint_url, "
        "repr(s.querystring_auth), repr(s.querystring_expire))"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SENTE_", "DJANGO_", "AWS_"))}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={
            **base,
            "DJANGO_SETTINGS_MODULE": "server.settings",
            "SENTE_DATA_DIR": str(tmp_path),
            "STORAGE_URL": "s3://sente-files/production?endpoint_url=https://s3.example.org"
            "&querystring_auth=false&querystring_expire=600",
        },
    )
    assert done.returncode == 0, done.stderr
    # the query's options typed as the storage wants them: a "false" left a string would be true
    assert done.stdout.split() == ["S3Storage", "sente-files", "production", "https://s3.example.org", "False", "600"]


def test_the_build_context_leaves_out_secrets_and_data(tmp_path):
    """.dockerignore, read as Docker reads it (docker-py's implementation when installed): the
    virtualenv, Git, the data folders (secret key, the platform's admin password, the database), the
    compose env file and certificates stay out; what the Dockerfile needs goes in."""
    context = tmp_path / "context"
    secret = [
        ".venv/bin/python",
        ".git/config",
        "sente-data/secret_key",
        "sente-data/platform.json",
        "sente-data/sente.sqlite3",
        "sente-data/files/networks/ab/cd/x.safetensors",
        "sente-experiment/platform.json",
        "deploy/sente.env",
        "deploy/tls/privkey.pem",
        "deploy/backups/latest/database.pgdump",
        "server/__pycache__/settings.cpython-311.pyc",
        "elsewhere/sente.sqlite3",
        "elsewhere/secret_key",
    ]
    needed = [
        "requirements.txt",
        "manage.py",
        "server/settings.py",
        "server/static/sente/site.css",
        "common/protocol.py",
        "client/__main__.py",
        "migrations/runs/0001_initial.py",
        "deploy/Dockerfile",
        "deploy/gunicorn.conf.py",
        "deploy/healthcheck.py",
        "deploy/backup.sh",
        "deploy/nginx/compose.conf",
    ]
    for name in secret + needed:
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        (context / name).write_text("x")
    shutil.copy(ROOT / ".dockerignore", context / ".dockerignore")
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    sent = None
    for python in dict.fromkeys([sys.executable, shutil.which("python3"), "/usr/bin/python3"]):
        if python is None:
            continue
        done = subprocess.run(
            [
                python,
                "-c",
                "import json, sys; from docker.utils.build import exclude_paths; "
                "print(json.dumps(sorted(exclude_paths(sys.argv[1], json.loads(sys.argv[2])))))",
                str(context),
                json.dumps(patterns),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            sent = set(json.loads(done.stdout))
            break
    if sent is None:  # Docker's rules for these patterns: * within a name, **/ any folders, a folder's whole tree

        def rule(pattern: str) -> re.Pattern:
            body = re.escape(pattern).replace(r"\*\*/", "(.*/)?").replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
            return re.compile(body + "(/.*)?")

        rules = [rule(p) for p in patterns]
        sent = {
            str(p.relative_to(context))
            for p in context.rglob("*")
            if p.is_file() and not any(r.fullmatch(str(p.relative_to(context))) for r in rules)
        }
    assert not sent & set(secret), sorted(sent & set(secret))
    assert set(needed) <= sent, sorted(set(needed) - sent)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_backups_hold_the_database_the_files_and_the_checkpoints(tmp_path):
    from django.db import connection

    from server.platform.processes import database_url

    rsync = _need("rsync", "rsync")
    if connection.vendor != "postgresql":
        missing(
            "the PostgreSQL the tests use (the backup runs pg_dump on it)",
            "start it on 127.0.0.1:5432 or set DATABASE_URL",
        )
    _need("pg_dump", "postgresql-client")
    from server.runs.models import create_run

    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    data = tmp_path / "data"
    files = data / "files"
    (files / "games" / "ab").mkdir(parents=True)
    (files / "games" / "ab" / "game.sgf").write_bytes(b"(;FF[4])")
    (files / "games" / "ab" / ".other.sgf.k2j4x9.tmp").write_bytes(b"(;FF")  # an upload being written
    (data / "training" / "test").mkdir(parents=True)
    (data / "training" / "test" / "b6c96.ckpt").write_bytes(b"checkpoint")
    backups = tmp_path / "backups"
    (backups / ".20200101T000000Z.partial" / "files").mkdir(parents=True)  # left by a backup killed halfway
    # rsync answers 24 when a file it listed vanished before it was copied (an upload's temporary file
    # renamed, say); the backup goes on. Any other failure ends it with nothing left behind.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "rsync").write_text(f'#!/bin/sh\n{rsync} "$@" || exit $?\nexit "${{RSYNC_STATUS:-0}}"\n')
    (fake / "rsync").chmod(0o755)
    env = {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "STORAGE_URL": files.as_uri(),
        "SENTE_DATA_DIR": str(data),
        "SENTE_BACKUP_DIR": str(backups),
        "PATH": f"{fake}:{os.environ['PATH']}",
    }
    for status in ("0", "24"):
        done = subprocess.run(
            ["bash", str(DEPLOY / "backup.sh")], capture_output=True, text=True, env={**env, "RSYNC_STATUS": status}
        )
        assert done.returncode == 0, done.stderr
        time.sleep(1.1)  # a new second, a new folder
    made = sorted(p for p in backups.iterdir() if p.name.startswith("20"))
    assert len(made) == 2 and not any(p.name.endswith(".partial") for p in backups.iterdir())
    latest = backups / "latest"
    assert latest.resolve() == made[-1]
    assert (latest / "files" / "games" / "ab" / "game.sgf").read_bytes() == b"(;FF[4])"
    assert not (latest / "files" / "games" / "ab" / ".other.sgf.k2j4x9.tmp").exists()
    assert (latest / "training" / "test" / "b6c96.ckpt").read_bytes() == b"checkpoint"
    listing = subprocess.run(
        ["pg_restore", "--list", str(latest / "database.pgdump")], capture_output=True, text=True, check=True
    ).stdout
    assert "TABLE DATA public runs_run" in listing
    for path in (made[-1], latest / "database.pgdump"):  # the dump holds password hashes and tokens
        assert path.stat().st_mode & 0o077 == 0, oct(path.stat().st_mode)
    first, last = (b / "files" / "games" / "ab" / "game.sgf" for b in made)
    assert first.stat().st_ino == last.stat().st_ino  # unchanged files are shared

    time.sleep(1.1)
    done = subprocess.run(
        ["bash", str(DEPLOY / "backup.sh")], capture_output=True, text=True, env={**env, "RSYNC_STATUS": "23"}
    )
    assert done.returncode == 23 and "rsync of" in done.stderr
    assert sorted(p for p in backups.iterdir() if p.name.startswith(("20", "."))) == sorted([*made, backups / ".lock"])


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_smoke_script_passes_against_the_server(server, tmp_path):
    from server.accounts.models import ClientToken, User
    from server.distribution.models import Task
    from server.games.models import TrainingGame, UploadRefusal

    user = User.objects.create_user("smoke", "smoke@example.org", "a long enough password")
    _, token = ClientToken.issue(user, "smoke")
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "smoke.py"), server.url, "--token", token],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for check in ("health", "API schema", "current run", "front page", "metrics", "task round trip"):
        assert f"ok   {check}" in done.stdout
    assert "smoke's tasks: 0 -> 1" in done.stdout and "left to expire unplayed" in done.stdout
    task = Task.objects.get()  # what the round trip leaves: one task of one game, and nothing else
    assert (task.user, task.games, task.games_received) == (user, 1, 0)
    assert not TrainingGame.objects.exists() and not UploadRefusal.objects.exists()
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "smoke.py"), server.url, "--username", "smoke"],
        input="wrong password\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "FAIL login" in done.stdout
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "smoke.py"), server.url, "--username", "smoke"],
        input="a long enough password\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "smoke's tasks: 1 -> 2" in done.stdout and "client token named 'smoke test'" in done.stdout
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "smoke.py"), server.url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "--no-task leaves it out" in done.stderr  # no round trip, no pass
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "smoke.py"), server.url, "--no-task"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "skip task round trip (--no-task)" in done.stdout, done.stdout + done.stderr


def test_a_backup_of_the_embedded_default_copies_the_sqlite_database_while_it_is_open(tmp_path):
    """The one-machine default (SQLite in SENTE_DATA_DIR, files beside it): SQLite's online backup
    copies the database, also while a connection holds a write open, and rsync the files."""
    import sqlite3

    _need("rsync", "rsync")
    data = tmp_path / "sente-data"
    (data / "files" / "networks").mkdir(parents=True)
    (data / "files" / "networks" / "n.safetensors").write_bytes(b"weights")
    database = sqlite3.connect(data / "sente.sqlite3")
    database.execute("CREATE TABLE runs_run (name TEXT)")
    database.execute("INSERT INTO runs_run VALUES ('main')")
    database.commit()
    database.execute("INSERT INTO runs_run VALUES ('not committed')")  # a write in progress
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "STORAGE_URL", "SENTE_BACKUP_DIR")}
    done = subprocess.run(
        ["bash", str(DEPLOY / "backup.sh")], capture_output=True, text=True, env={**env, "SENTE_DATA_DIR": str(data)}
    )
    database.close()
    assert done.returncode == 0, done.stderr
    latest = data / "backups" / "latest"
    copy = sqlite3.connect(latest / "database.sqlite3")
    assert copy.execute("SELECT name FROM runs_run").fetchall() == [("main",)]
    copy.close()
    assert (latest / "files" / "networks" / "n.safetensors").read_bytes() == b"weights"


class _PatientServer(LiveServer):
    """The server, waited for as long as its master takes to fill numba's cache."""

    def _wait(self, seconds: float = 900.0) -> None:
        super()._wait(seconds)


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time (ns)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def _copy_of_the_kernel_cache(cache: Path) -> None:
    """This checkout's numba cache (``__pycache__`` beside the modules: whatever the session's tests
    compiled so far) copied into ``cache`` as numba lays out a NUMBA_CACHE_DIR, so that the server
    started on it loads what is there rather than compile every kernel again (a minute of processor
    time). numba writes each cache file whole (to a temporary name, then renamed), so a copy taken
    while another test compiles holds whole files."""
    from numba.core.caching import UserProvidedCacheLocator

    for pycache in [p for package in ("common", "client", "server") for p in (ROOT / package).rglob("__pycache__")]:
        compiled = [*pycache.glob("*.nbi"), *pycache.glob("*.nbc")]
        if compiled:  # numba names the folder by the modules' folder: any module of it will do
            folder = cache / UserProvidedCacheLocator.get_suitable_cache_subpath(str(pycache.parent / "x.py"))
            folder.mkdir(parents=True)
            for path in compiled:
                shutil.copy2(path, folder / path.name)


_CACHE_LINE = re.compile(r"\[cache\] (index|data) (loaded from|saved to) '([^']+)'")


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_web_workers_only_load_numbas_kernels_while_they_serve(tmp_path):
    """gunicorn's master loads (or compiles) the web's kernels into numba's cache before it starts any
    worker (without preload_app: through manage.py warm_up --web); its workers then take a self-play
    upload and show the game's page loading from the cache only what the master loaded or compiled:
    none compiles a kernel or writes the cache, which several processes doing at once can corrupt,
    and none needs a kernel the master's warm-up left out (the cache holds the session's other
    kernels too, so a kernel the warm-up missed would be loaded by a worker alone). NUMBA_DEBUG_CACHE
    logs every save and load of the cache."""
    from django.db import connection

    from server.accounts.models import ClientToken, User
    from server.games.models import TrainingGame
    from server.platform.processes import database_url
    from server.runs.models import create_run

    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    game = helpers.selfplay_games(tmp_path / "games", helpers.RANDOM_NET, count=1)[0]
    user = User.objects.create_user("alice", "alice@example.org", "correct horse battery")
    _, token = ClientToken.issue(user, "e2e")
    headers = {"Authorization": f"Token {token}"}
    cache, data = tmp_path / "numba", tmp_path / "data"
    data.mkdir()
    _copy_of_the_kernel_cache(cache)
    env = {"NUMBA_CACHE_DIR": str(cache), "NUMBA_DEBUG_CACHE": "1", "PYTHONUNBUFFERED": "1", "SENTE_PRELOAD": "0"}
    server = _PatientServer(database_url(connection.settings_dict), data, workers=2, env=env)
    try:
        started = _files(cache)
        task = requests.post(
            server.url + "/api/v1/tasks/",
            json={"client_version": "0.1.0", "client_instance_id": "e2e", "kinds": ["selfplay"], "games": 1},
            headers=headers,
            timeout=30,
        )
        assert task.status_code == 201, task.text
        upload = requests.post(
            task.json()["upload_url"],
            data={"task": task.json()["id"], "metadata": json.dumps(game.metadata)},
            files={"sgf": ("game.sgf", game.sgf), "npz": ("game.npz", game.npz)},
            headers=headers,
            timeout=120,
        )
        assert upload.status_code == 201, upload.text
        page = requests.get(f"{server.url}/games/{TrainingGame.objects.get().pk}/", timeout=60)
        assert page.status_code == 200
    finally:
        server.stop()
    log = server.log_path.read_text(errors="replace")
    booted = log.index("Booting worker")
    warmed = {m[2] for m in _CACHE_LINE.findall(log[:booted]) if m[0] == "data"}
    assert warmed  # the master's warm-up went through the cache
    served = _CACHE_LINE.findall(log[booted:])
    assert not [m for m in served if m[1] == "saved to"], log[booted:][-3000:]
    loaded = {m[2] for m in served if m[0] == "data"}
    assert loaded and loaded <= warmed, sorted(loaded - warmed)
    assert _files(cache) == started


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_backup_gives_pg_dump_the_password_in_a_file_not_on_its_command_line(tmp_path):
    """Every user of the machine reads every process's command line (ps): the database's password goes
    to pg_dump in a password file readable by the backup's user alone, deleted when it is done."""
    from django.db import connection

    if connection.vendor != "postgresql":
        missing("the PostgreSQL the tests use (the backup runs pg_dump on it)", "start it or set DATABASE_URL")
    real = _need("pg_dump", "postgresql-client")
    _need("rsync", "rsync")
    password = r"s3cr:t@p%w\d"
    quoted = password.replace("%", "%25").replace(":", "%3A").replace("@", "%40").replace("\\", "%5C")
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    url = f"postgres://{user}:{quoted}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    seen = tmp_path / "seen"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "pg_dump").write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > {seen}/argv\n'
        f'printf "%s" "$PGPASSFILE" > {seen}/passfile\n'
        f'stat -c %a "$PGPASSFILE" > {seen}/mode\n'
        f'cat "$PGPASSFILE" > {seen}/content\n'
        f'exec {real} "$@"\n'
    )
    (fake / "pg_dump").chmod(0o755)
    seen.mkdir()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SENTE_DATA_DIR": str(tmp_path / "data"),
        "SENTE_BACKUP_DIR": str(tmp_path / "backups"),
        "TMPDIR": str(tmp_path),
        "PATH": f"{fake}:{os.environ['PATH']}",
    }
    done = subprocess.run(["bash", str(DEPLOY / "backup.sh")], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    argv = (seen / "argv").read_text()
    assert password not in argv and quoted not in argv and "s3cr" not in argv, argv
    assert (seen / "mode").read_text().strip() == "600"
    assert (seen / "content").read_text() == "*:*:*:*:" + password.replace("\\", "\\\\").replace(":", "\\:") + "\n"
    assert not Path((seen / "passfile").read_text()).exists()  # deleted once the dump is made
    assert not list(tmp_path.glob("sente-backup-pgpass.*"))
    listing = subprocess.run(
        ["pg_restore", "--list", str(tmp_path / "backups" / "latest" / "database.pgdump")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "TABLE DATA public runs_run" in listing

    done = subprocess.run(
        ["bash", str(DEPLOY / "backup.sh")],
        capture_output=True,
        text=True,
        env={**env, "DATABASE_URL": f"mysql://sente:{quoted}@db/sente"},
    )
    assert done.returncode == 2 and "only postgres://" in done.stderr and "s3cr" not in done.stderr


def _production(tmp_path: Path, **env: str) -> dict[str, str]:
    """A production server's required settings (the example's address), with ``env`` over them."""
    return {
        "SENTE_DATA_DIR": str(tmp_path),
        "SENTE_PRODUCTION": "1",
        "ALLOWED_HOSTS": "go.example.org",
        "SECRET_KEY": "s" * 50,
        "SENTE_PUBLIC_URL": "https://go.example.org",
        "SENTE_METRICS_TOKEN": "a-scrape-token-of-the-test",
        **env,
    }


def test_production_refuses_to_start_without_its_public_url(tmp_path):
    """The links of webhook posts start with SENTE_PUBLIC_URL: in production it must be the site's own,
    not missing nor the default http://127.0.0.1:8000; a DEBUG server, or any server outside
    production (make run, the tests), keeps the default."""
    production = _production(tmp_path)
    del production["SENTE_PUBLIC_URL"]
    for given in ({}, {"SENTE_PUBLIC_URL": "http://127.0.0.1:8000"}, {"SENTE_PUBLIC_URL": "http://127.0.0.1:8000/"}):
        done = helpers.settings_in_a_process({**production, **given}, "SENTE_PUBLIC_URL")
        assert done.returncode != 0 and "SENTE_PUBLIC_URL" in done.stderr, done.stderr
        assert ("is missing" if not given else "is the default") in done.stderr
    done = helpers.settings_in_a_process({**production, "SENTE_PUBLIC_URL": "go.example.org"}, "SENTE_PUBLIC_URL")
    assert done.returncode != 0 and "must be an http:// or https:// address with a host" in done.stderr
    done = helpers.settings_in_a_process({**production, "DEBUG": "1"}, "SENTE_PUBLIC_URL")
    assert done.returncode == 0 and done.stdout.strip() == "http://127.0.0.1:8000", done.stderr
    done = helpers.settings_in_a_process({"SENTE_DATA_DIR": str(tmp_path)}, "SENTE_PUBLIC_URL", "SENTE_METRICS_TOKEN")
    assert done.returncode == 0 and done.stdout.strip() == "http://127.0.0.1:8000", done.stderr
    done = helpers.settings_in_a_process(_production(tmp_path), "SENTE_PUBLIC_URL")
    assert done.returncode == 0 and done.stdout.strip() == "https://go.example.org", done.stderr


def test_production_refuses_to_start_without_a_metrics_token_of_its_own(tmp_path):
    """/metrics answers only scrapes with the token: production needs one, not the example's, and not
    one short enough to guess."""
    example = _env_file(DEPLOY / "sente.env.example")["SENTE_METRICS_TOKEN"]
    for token, problem in (
        ("", "SENTE_METRICS_TOKEN must be set when SENTE_PRODUCTION is on"),
        (example, f"SENTE_METRICS_TOKEN is still the example's {example!r}"),
        ("short", "SENTE_METRICS_TOKEN has 5 characters: use at least 16"),
    ):
        done = helpers.settings_in_a_process(_production(tmp_path, SENTE_METRICS_TOKEN=token), "SENTE_METRICS_TOKEN")
        assert done.returncode != 0 and problem in done.stderr, done.stderr
    done = helpers.settings_in_a_process(_production(tmp_path), "SENTE_METRICS_TOKEN")
    assert done.returncode == 0 and done.stdout.strip() == "a-scrape-token-of-the-test", done.stderr


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_production_server_answers_metrics_only_to_the_token(tmp_path):
    """Under gunicorn with production's settings, a scrape without the token, or with another, is
    refused, also from the machine itself (behind nginx every request comes from there)."""
    from django.db import connection

    from server.platform.processes import database_url
    from server.runs.models import create_run

    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    data = tmp_path / "data"
    data.mkdir()
    env = _production(data, ALLOWED_HOSTS="localhost", SENTE_WORKERS="1")
    with HealthcheckedServer(database_url(connection.settings_dict), data, workers=1, env=env) as server:
        visitor = {"Host": "localhost", "X-Forwarded-Proto": "https"}
        for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer "}):
            refused = requests.get(server.url + "/metrics", headers={**visitor, **auth}, timeout=30)
            assert refused.status_code == 401, (auth, refused.status_code)
        scrape = requests.get(
            server.url + "/metrics",
            headers={**visitor, "Authorization": "Bearer a-scrape-token-of-the-test"},
            timeout=30,
        )
        assert scrape.status_code == 200 and "sente_training_games{" in scrape.text


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
@pytest.mark.parametrize("server", [{"SENTE_METRICS_TOKEN": "a-scrape-token-of-the-test"}], indirect=True)
def test_the_smoke_script_says_when_the_metrics_want_their_token(server):
    base = {k: v for k, v in os.environ.items() if k != "SENTE_METRICS_TOKEN"}
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "smoke.py"), server.url, "--no-task"],
        capture_output=True,
        text=True,
        timeout=120,
        env=base,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL metrics: /metrics wants the server's scrape token (no token was given)" in done.stdout
    done = subprocess.run(
        [sys.executable, str(DEPLOY / "smoke.py"), server.url, "--no-task"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "SENTE_METRICS_TOKEN": "a-scrape-token-of-the-test"},
    )
    assert done.returncode == 0 and "ok   metrics" in done.stdout, done.stdout + done.stderr
