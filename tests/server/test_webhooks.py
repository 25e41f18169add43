"""The runs' webhooks under attack: URLs that name this machine, the private network or a metadata
service are refused when saved and again at each attempt (which connects only to the addresses it
checked); every post is signed and verifies with the recipe docs/website.md gives; an attempt ends
at its deadline however slowly the receiver dribbles, reads no more than its cap of an answer, keeps
no more than a short printable excerpt of it, and follows no redirect; a delivery whose attempt was
lost with its process is made once, by the sweep a restarted process runs. Real receivers (sockets
in threads), the real database, a real gunicorn for the restart."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import ipaddress
import json
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from http.client import parse_headers
from io import BytesIO
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.utils import timezone

from tests.e2e.needs import missing
from tests.server.live import LiveServer

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_URL = "https://93.184.215.14/hook"  # a public address, written as one: no lookup needed offline
ATTACKS = [  # (URL, what the refusal must name)
    ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
    ("http://[::1]/", "::1 is a loopback address"),
    ("http://10.0.0.1/", "10.0.0.1 is a private address (RFC 1918)"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata service's address"),
    ("http://localhost:8080/hook", "localhost resolves to 127.0.0.1, a loopback address"),
    ("http://2130706433/", "2130706433 resolves to 127.0.0.1, a loopback address"),
    ("http://[::ffff:a9fe:a9fe]/", "the IPv4-mapped form of 169.254.169.254"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal is a cloud metadata service"),
    ("http://100.64.0.1/", "100.64.0.1 is a carrier-grade NAT address"),
    ("http://[fd00::1]/", "fd00::1 is a unique-local address"),
    ("http://0.0.0.0:8000/", "0.0.0.0 is an unspecified address"),
    ("gopher://example.org/", "webhooks post over http or https only"),
    ("http://admin:secret@example.org/", "may not carry a user name or password"),
    ("http://[::ffff:0:7f00:1]/", "::ffff:0:7f00:1 is the IPv4-translated form of 127.0.0.1, a loopback address"),
]


@pytest.fixture
def hook_settings(settings):
    settings.SENTE_WEBHOOK = {"timeout_seconds": 5.0, "backoff_seconds": 60.0, "attempts": 3, "allow_private": False}
    return settings.SENTE_WEBHOOK


def _allow_private(settings, timeout: float = 5.0) -> None:
    settings.SENTE_WEBHOOK = {**settings.SENTE_WEBHOOK, "allow_private": True, "timeout_seconds": timeout}


# --- receivers --------------------------------------------------------------------------------------
class Receiver:
    """A TCP server on a loopback address that reads each request (head and body) and answers it with
    ``answer(connection, request)`` in a thread of its own; it counts the connections it accepted."""

    def __init__(
        self,
        answer: Callable[[socket.socket, Request], None] | None = None,
        host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
    ):
        self.answer = answer or _no_content
        self.tls = tls
        self.listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind((host, 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://{f'[{host}]' if ':' in host else host}:{self.port}/hook"
        self.connections = 0
        self.requests: list[Request] = []
        self.errors: list[BaseException] = []
        self.arrived = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            conn.settimeout(30)
            request = Request.read(conn)
            self.requests.append(request)
            self.arrived.set()
            self.answer(conn, request)
        except (OSError, ssl.SSLError) as e:
            self.errors.append(e)
        finally:
            conn.close()

    def close(self) -> None:
        self.listener.close()


class Request:
    def __init__(self, head: bytes, body: bytes):
        self.line, _, rest = head.partition(b"\r\n")
        self.headers = parse_headers(BytesIO(rest + b"\r\n"))
        self.body = body

    @classmethod
    def read(cls, conn: socket.socket) -> Request:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                raise ConnectionError("the request ended early")
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        request = cls(head, b"")
        length = int(request.headers.get("Content-Length", 0))
        while len(body) < length:
            body += conn.recv(65536)
        request.body = body
        return request


def _no_content(conn: socket.socket, request: Request) -> None:
    conn.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture
def receivers():
    started: list[Receiver] = []

    def start(*args, **kwargs) -> Receiver:
        started.append(Receiver(*args, **kwargs))
        return started[-1]

    yield start
    for r in started:
        r.close()


def _run_with_hook(run, url: str = PUBLIC_URL):
    run.webhook_url = url
    run.save()  # no validation: the tests put rows in directly, as a changed DNS answer would
    return run


def _delivery(run, url: str, **fields):
    """A delivery to ``url``, the run's webhook URL (put in directly: the run keeps its secret)."""
    from server.notices.models import WebhookDelivery

    type(run).objects.filter(pk=run.pk).update(webhook_url=url)
    run.webhook_url = url
    return WebhookDelivery.objects.create(
        run=run, url=url, payload={"text": "Network n accepted", "event": "accepted"}, **fields
    )


# --- the addresses ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("address", "why", "private"),
    [
        ("127.0.0.1", "loopback", True),
        ("127.255.0.9", "loopback", True),
        ("::1", "loopback", True),
        ("10.1.2.3", "private", True),
        ("172.31.255.255", "private", True),
        ("192.168.0.1", "private", True),
        ("fd12:3456::1", "unique-local", True),
        ("100.64.0.1", "carrier-grade NAT", True),
        ("169.254.169.254", "metadata", False),
        ("169.254.170.2", "metadata", False),
        ("100.100.100.200", "metadata", False),
        ("fd00:ec2::254", "metadata", False),
        ("169.254.1.1", "link-local", False),
        ("fe80::1", "link-local", False),
        ("224.0.0.1", "multicast", False),
        ("239.255.255.250", "multicast", False),
        ("ff02::1", "multicast", False),
        ("0.0.0.0", "unspecified", False),
        ("::", "unspecified", False),
        ("240.0.0.1", "reserved", False),
        ("255.255.255.255", "reserved", False),
        ("192.0.2.1", "reserved", False),  # documentation
        ("198.18.0.1", "reserved", False),  # benchmarking
        ("::7f00:1", "IPv4-compatible", False),
        ("fec0::1", "site-local", False),
        ("::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1, a loopback", True),
        ("::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1, a private", True),
        ("::ffff:169.254.169.254", "IPv4-mapped form of 169.254.169.254, a cloud metadata", False),
        ("::ffff:0:7f00:1", "IPv4-translated form of 127.0.0.1, a loopback", True),
        ("::ffff:0:a00:1", "IPv4-translated form of 10.0.0.1, a private", True),
        ("::ffff:0:a9fe:a9fe", "IPv4-translated form of 169.254.169.254, a cloud metadata", False),
        ("::ffff:0:0:0", "IPv4-translated form of 0.0.0.0, an unspecified", False),
        ("64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254", False),
        ("64:ff9b::7f00:1", "NAT64 form of 127.0.0.1, a loopback", True),
        ("2002:7f00:1::1", "6to4 form of 127.0.0.1", True),
        ("2001:db8::1", "reserved", False),
    ],
)
def test_every_kind_of_inner_address_is_named(address, why, private):
    from server.outbound.targets import classify

    found = classify(ipaddress.ip_address(address))
    assert found is not None and why in found[0] and found[1] is private


@pytest.mark.parametrize(
    "address", ["93.184.215.14", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "::ffff:0:808:808", "2002:808:808::1"]
)
def test_public_addresses_pass(address):
    from server.outbound.targets import classify

    assert classify(ipaddress.ip_address(address)) is None


def test_what_is_kept_of_an_answer_is_short_and_printable():
    from server.outbound.transport import printable

    assert printable("bad\x1b[31m token\r\n\x00\u200b\tend", 100) == "bad [31m token end"
    assert printable("x" * 500, 10) == "x" * 9 + "…"
    assert printable("", 10) == ""


# --- refused when saved ---------------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize(("url", "named"), ATTACKS)
def test_the_model_refuses_inner_targets_naming_url_address_and_why(run, hook_settings, url, named):
    run.webhook_url = url
    with pytest.raises(ValidationError) as refused:
        run.full_clean()
    message = " ".join(refused.value.message_dict["webhook_url"])
    assert url in message and named in message


@pytest.mark.django_db
def test_allowing_private_networks_still_refuses_metadata_and_link_local(run, settings, hook_settings):
    _allow_private(settings)
    for url in ("http://127.0.0.1:8065/hooks/abc", "http://10.0.0.1/", "http://[::1]/", "http://localhost/"):
        run.webhook_url = url
        run.full_clean()
    for url, named in [
        ("http://169.254.169.254/", "cloud metadata"),
        ("http://[::ffff:169.254.169.254]/", "cloud metadata"),
        ("http://[::ffff:0:a9fe:a9fe]/", "cloud metadata"),
        ("http://100.100.100.200/", "cloud metadata"),
        ("http://169.254.10.10/", "link-local"),
        ("http://metadata.google.internal/", "cloud metadata"),
        ("http://224.0.0.1/", "multicast"),
    ]:
        run.webhook_url = url
        with pytest.raises(ValidationError, match=named):
            run.full_clean()


def _admin_form(client, run) -> dict:
    """The run's change form in the admin as the page fills it in."""
    page = client.get(f"/admin/runs/run/{run.pk}/change/")
    assert page.status_code == 200
    form = page.context["adminform"].form
    data = {name: form[name].value() for name in form.fields if not form.fields[name].disabled}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    data["client_builds"] = ""
    data["new_webhook_secret"] = ""
    for inline in page.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update({f"{formset.prefix}-{k}": v for k, v in formset.management_form.initial.items()})
        for i, f in enumerate(formset.forms):
            data[f"{formset.prefix}-{i}-id"] = f.instance.pk
            data[f"{formset.prefix}-{i}-run"] = run.pk
    return data


@pytest.mark.django_db
def test_the_admin_refuses_them_and_shows_a_new_secret_for_a_public_one(run, hook_settings, client):
    from server.accounts.models import User
    from server.runs.models import Run

    client.force_login(User.objects.create_superuser("boss", "boss@example.org", "a long enough password"))
    data = _admin_form(client, run)
    for url, named in ATTACKS[:5]:
        refused = client.post(f"/admin/runs/run/{run.pk}/change/", {**data, "webhook_url": url})
        assert refused.status_code == 200, url
        errors = " ".join(refused.context["adminform"].form.errors.get("webhook_url", []))
        assert url in errors and named in errors
        assert Run.objects.get(pk=run.pk).webhook_url == ""
    saved = client.post(f"/admin/runs/run/{run.pk}/change/", {**data, "webhook_url": PUBLIC_URL})
    assert saved.status_code == 302
    run.refresh_from_db()
    secret = run.webhook_secret
    assert run.webhook_url == PUBLIC_URL and re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", secret)
    assert len(base64.b64decode(secret[6:])) == 32
    assert secret in client.get(f"/admin/runs/run/{run.pk}/change/").content.decode()
    data = _admin_form(client, run)
    assert client.post(f"/admin/runs/run/{run.pk}/change/", data).status_code == 302
    run.refresh_from_db()
    assert run.webhook_secret == secret  # kept while the URL stays
    assert client.post(f"/admin/runs/run/{run.pk}/change/", {**data, "new_webhook_secret": "on"}).status_code == 302
    run.refresh_from_db()
    assert run.webhook_secret.startswith("whsec_") and run.webhook_secret != secret  # rotated
    assert client.post(f"/admin/runs/run/{run.pk}/change/", {**data, "webhook_url": ""}).status_code == 302
    run.refresh_from_db()
    assert run.webhook_secret == ""


OTHER_URL = "https://93.184.215.15/hook"  # another receiver, at another public address


@pytest.mark.django_db
def test_another_url_gets_a_new_secret_and_the_same_url_keeps_it(run, hook_settings):
    from server.runs.models import Run

    def stored() -> str:
        return Run.objects.get(pk=run.pk).webhook_secret

    _run_with_hook(run, PUBLIC_URL)
    first = stored()
    run.description = "edited"
    run.save()
    Run.objects.get(pk=run.pk).save()  # a fresh copy saved as it is
    copy = Run.objects.get(pk=run.pk)
    copy.webhook_url = PUBLIC_URL
    copy.save(update_fields=["webhook_url"])
    assert first.startswith("whsec_") and stored() == first  # the same URL keeps its secret
    secrets = [first]
    for url in (OTHER_URL, OTHER_URL + "?channel=2", "https://93.184.215.15/HOOK", PUBLIC_URL):
        copy = Run.objects.get(pk=run.pk)
        copy.webhook_url = url
        copy.save(update_fields=["webhook_url"])
        secrets.append(stored())
    assert len(set(secrets)) == len(secrets) and all(s.startswith("whsec_") for s in secrets)
    run.webhook_url = OTHER_URL  # a copy read before those changes, pointed elsewhere again
    run.save()
    assert stored() == run.webhook_secret and run.webhook_secret not in secrets


@pytest.mark.django_db
def test_the_admin_makes_a_new_secret_when_the_url_changes_and_says_so(run, hook_settings, client):
    from server.accounts.models import User

    client.force_login(User.objects.create_superuser("boss", "boss@example.org", "a long enough password"))
    _run_with_hook(run, PUBLIC_URL)
    first = run.webhook_secret
    data = _admin_form(client, run)
    page = client.post(f"/admin/runs/run/{run.pk}/change/", data, follow=True)
    run.refresh_from_db()
    assert run.webhook_secret == first and "new secret" not in page.content.decode()
    page = client.post(f"/admin/runs/run/{run.pk}/change/", {**data, "webhook_url": OTHER_URL}, follow=True)
    run.refresh_from_db()
    assert run.webhook_url == OTHER_URL and run.webhook_secret.startswith("whsec_") and run.webhook_secret != first
    assert "signed with a new secret from now on" in page.content.decode()


@pytest.mark.django_db
def test_the_receiver_at_the_old_url_cannot_sign_for_the_new_one(run, settings, hook_settings, receivers):
    """Pointing the webhook at another receiver makes a new secret: the old receiver's does not verify
    the new one's posts, and posts still pending to the old URL are given up, never signed with it."""
    from server.notices import delivery as posts

    verify = _documented_verify()
    old, new = receivers(), receivers()
    _allow_private(settings)
    _run_with_hook(run, old.url)
    old_secret = run.webhook_secret
    pending = _delivery(run, old.url)  # recorded while the old URL was set, not posted yet
    _run_with_hook(run, new.url)  # staff point the webhook at another receiver
    assert run.webhook_secret.startswith("whsec_") and run.webhook_secret != old_secret
    assert posts.attempt(pending.pk) is None
    pending.refresh_from_db()
    assert pending.status == "failed" and "webhook URL has changed" in pending.last_error
    assert old.connections == 0
    delivery = _delivery(run, new.url)
    assert posts.attempt(delivery.pk) is None
    (request,) = new.requests
    assert verify(run.webhook_secret, request.headers, request.body)
    assert not verify(old_secret, request.headers, request.body)


@pytest.mark.django_db
def test_staff_who_may_only_view_runs_see_that_a_secret_is_set_not_the_secret(run, hook_settings):
    from django.contrib.auth.models import Permission
    from django.test import Client

    from server.accounts.models import User

    def staff(name: str, *codenames: str) -> Client:
        user = User.objects.create_user(name, f"{name}@example.org", "a long enough password", is_staff=True)
        user.user_permissions.add(*Permission.objects.filter(content_type__app_label="runs", codename__in=codenames))
        client = Client()
        client.force_login(user)
        return client

    _run_with_hook(run, PUBLIC_URL)
    secret = run.webhook_secret
    viewer = staff("viewer", "view_run")
    page = viewer.get(f"/admin/runs/run/{run.pk}/change/")
    assert page.status_code == 200 and PUBLIC_URL in page.content.decode()  # the run is shown to them
    assert "set (shown only to staff who may change runs)" in page.content.decode()
    for url in (f"/admin/runs/run/{run.pk}/change/", "/admin/runs/run/", f"/admin/runs/run/{run.pk}/history/"):
        body = viewer.get(url).content.decode()
        assert secret not in body and "whsec_" not in body, url
    assert viewer.post(f"/admin/runs/run/{run.pk}/change/", {"new_webhook_secret": "on"}).status_code == 403
    run.refresh_from_db()
    assert run.webhook_secret == secret
    editor = staff("editor", "view_run", "change_run")
    assert secret in editor.get(f"/admin/runs/run/{run.pk}/change/").content.decode()


# --- refused at delivery ----------------------------------------------------------------------------
@pytest.mark.django_db
def test_an_attempt_refuses_inner_targets_without_connecting(run, hook_settings, receivers, caplog):
    from server.notices import delivery as posts

    _run_with_hook(run)
    v4 = receivers()
    v6 = receivers(host="::1")
    urls = [
        v4.url,
        v6.url,
        f"http://localhost:{v4.port}/hook",
        f"http://2130706433:{v4.port}/hook",
        f"http://[::ffff:127.0.0.1]:{v4.port}/hook",
        f"http://[::ffff:0:7f00:1]:{v4.port}/hook",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://metadata.google.internal/computeMetadata/v1/",
    ]
    for url in urls:
        delivery = _delivery(run, url)  # as if saved before the name pointed here, or put in the database
        with caplog.at_level("ERROR", logger="server.notices.delivery"):
            assert posts.attempt(delivery.pk) is None  # given up: no retry of a refused target
        delivery.refresh_from_db()
        assert delivery.status == "failed" and delivery.attempts == 1, url
        assert delivery.last_error.startswith(f"refused: {url}: ") and "public addresses only" in delivery.last_error
    assert v4.connections == 0 and v6.connections == 0
    assert "10.0.0.1 is a private address" in caplog.text and "169.254.169.254 is a cloud metadata" in caplog.text


@pytest.mark.django_db
def test_with_private_networks_allowed_an_attempt_still_refuses_the_metadata_service(run, settings, hook_settings):
    from server.notices import delivery as posts

    _allow_private(settings)
    _run_with_hook(run)
    for url in ("http://169.254.169.254/", "http://[fd00:ec2::254]/", "http://metadata.google.internal/"):
        delivery = _delivery(run, url)
        posts.attempt(delivery.pk)
        delivery.refresh_from_db()
        assert delivery.status == "failed" and "cloud metadata" in delivery.last_error


@pytest.mark.django_db
def test_an_attempt_looks_the_name_up_once_and_connects_to_what_it_checked(
    run, settings, hook_settings, receivers, monkeypatch
):
    """The connection goes to the checked address with the name in the Host header: a name that does
    not resolve at all is posted to when its checked address is given, and a real attempt asks the
    resolver once."""
    from server.notices import delivery as posts
    from server.outbound import targets
    from server.outbound.transport import Deadline, post

    receiver = receivers()
    endpoint = targets.Endpoint(ipaddress.ip_address("127.0.0.1"), socket.AF_INET, ("127.0.0.1", receiver.port))
    pinned = targets.Target(
        "http://hooks.example.invalid/x", "http", "hooks.example.invalid", receiver.port, "/x?a=1", (endpoint,)
    )
    reply = post(pinned, b"{}", {"Content-Type": "application/json"}, Deadline(5))
    assert reply.status == 204 and receiver.requests[0].line == b"POST /x?a=1 HTTP/1.1"
    assert receiver.requests[0].headers["Host"] == f"hooks.example.invalid:{receiver.port}"

    lookups: list[str] = []
    real = socket.getaddrinfo

    def counted(host, *args, **kwargs):
        lookups.append(host)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", counted)
    _allow_private(settings)
    _run_with_hook(run)
    delivery = _delivery(run, f"http://localhost:{receiver.port}/hook")
    assert posts.attempt(delivery.pk) is None
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and lookups == ["localhost"]
    assert receiver.requests[1].headers["Host"] == f"localhost:{receiver.port}"
    v6 = receivers(host="::1")
    delivery = _delivery(run, v6.url)
    assert posts.attempt(delivery.pk) is None
    assert len(v6.requests) == 1 and v6.requests[0].headers["Host"] == f"[::1]:{v6.port}"


def _certificate(folder: Path, name: str) -> Path:
    """A self-signed certificate (and key) for ``name``, in one PEM file."""
    if shutil.which("openssl") is None:
        missing("openssl", "apt-get install openssl (.ci/run installs it)")
    pem, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}"),
            *("-addext", f"subjectAltName=DNS:{name}", "-keyout", str(key), "-out", str(pem)),
        ],
        check=True,
        capture_output=True,
    )
    return pem


def test_tls_names_and_verifies_the_host_while_connecting_to_the_checked_address(tmp_path, receivers):
    from server.outbound import targets
    from server.outbound.transport import Deadline, PostFailed, post

    cert = _certificate(tmp_path, "hooks.example.test")
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, tmp_path / "key.pem")
    names: list[str | None] = []
    server_side.sni_callback = lambda sock, name, context: names.append(name)
    receiver = receivers(tls=server_side)
    client_side = ssl.create_default_context(cafile=str(cert))
    endpoint = targets.Endpoint(ipaddress.ip_address("127.0.0.1"), socket.AF_INET, ("127.0.0.1", receiver.port))

    def target(host: str):
        return targets.Target(f"https://{host}/hook", "https", host, receiver.port, "/hook", (endpoint,))

    assert post(target("hooks.example.test"), b"{}", {}, Deadline(5), tls=client_side).status == 204
    assert names == ["hooks.example.test"]
    assert receiver.requests[0].headers["Host"] == f"hooks.example.test:{receiver.port}"
    with pytest.raises(PostFailed, match="TLS certificate: Hostname mismatch"):
        post(target("other.example.test"), b"{}", {}, Deadline(5), tls=client_side)
    with pytest.raises(PostFailed, match="TLS certificate"):  # not trusted by the usual bundle
        post(target("hooks.example.test"), b"{}", {}, Deadline(5))


# --- the deadline, the cap, the excerpt, redirects ----------------------------------------------------
def _dribble(head: bytes):
    def answer(conn: socket.socket, request: Request) -> None:
        conn.sendall(head)
        while True:  # a byte every 0.1 s, for as long as the other side listens
            conn.sendall(b"a")
            time.sleep(0.1)

    return answer


@pytest.mark.django_db
@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nX-Slow: ",  # headers that never end
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100000\r\n\r\n",  # a body that never ends
    ],
)
def test_a_receiver_that_dribbles_is_cut_at_the_overall_deadline(run, settings, hook_settings, receivers, head):
    from server.notices import delivery as posts

    _allow_private(settings, timeout=1.5)
    _run_with_hook(run)
    receiver = receivers(_dribble(head))
    delivery = _delivery(run, receiver.url)
    began = time.monotonic()
    assert posts.attempt(delivery.pk) == 60.0  # a failure, retried later
    took = time.monotonic() - began
    delivery.refresh_from_db()
    assert took < 1.5 + 5  # each byte came well within any per-read timeout; the whole did not
    assert delivery.status == "pending" and delivery.claimed_until is None
    if b"500" in head:
        assert delivery.last_error.startswith("HTTP 500 Internal Server Error: aaa")
    else:
        assert delivery.last_error == "no complete answer within 1.5 s"


@pytest.mark.django_db
def test_a_huge_answer_is_not_read_past_the_cap_nor_kept(run, settings, hook_settings, receivers):
    from server.notices import delivery as posts
    from server.outbound import targets
    from server.outbound.transport import REPLY_BYTES, Deadline, PostFailed, post

    sent = {"bytes": 0, "error": None}
    secret = b"root:x:0:0:root:/root:/bin/bash\n\x1b[2J\x00AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI\r\n" * 40

    def huge(conn: socket.socket, request: Request) -> None:
        conn.sendall(b"HTTP/1.1 500 Internal Server Error\x07\x1b[31m\r\nContent-Length: 100000000\r\n\r\n")
        try:
            for _ in range(100_000_000 // len(secret)):
                conn.sendall(secret)
                sent["bytes"] += len(secret)
        except OSError as e:
            sent["error"] = e

    _allow_private(settings)
    _run_with_hook(run)
    receiver = receivers(huge)
    delivery = _delivery(run, receiver.url)
    posts.attempt(delivery.pk)
    delivery.refresh_from_db()
    error = delivery.last_error
    assert error.startswith("HTTP 500 Internal Server Error [31m: root:x:0:0:root:/root:/bin/bash [2J AWS_SECRET")
    assert len(error) < 200 and not any(ord(c) < 32 or ord(c) == 127 for c in error)
    deadline = time.monotonic() + 10
    while sent["error"] is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert isinstance(sent["error"], OSError) and sent["bytes"] < 100_000_000  # the rest was never read

    endpoint = targets.Endpoint(ipaddress.ip_address("127.0.0.1"), socket.AF_INET, ("127.0.0.1", receiver.port))
    target = targets.Target(receiver.url, "http", "127.0.0.1", receiver.port, "/hook", (endpoint,))
    assert post(target, b"{}", {}, Deadline(5)).received <= REPLY_BYTES

    def endless_headers(conn: socket.socket, request: Request) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        with contextlib.suppress(OSError):
            while True:
                conn.sendall(b"X-Filler: " + b"f" * 1000 + b"\r\n")

    headers_receiver = receivers(endless_headers)
    endpoint = targets.Endpoint(ipaddress.ip_address("127.0.0.1"), socket.AF_INET, ("127.0.0.1", headers_receiver.port))
    target = targets.Target(headers_receiver.url, "http", "127.0.0.1", headers_receiver.port, "/hook", (endpoint,))
    with pytest.raises(PostFailed, match=f"longer than {REPLY_BYTES} bytes"):
        post(target, b"{}", {}, Deadline(5))


@pytest.mark.django_db
def test_a_redirect_is_not_followed(run, settings, hook_settings, receivers):
    from server.notices import delivery as posts

    elsewhere = receivers()

    def redirect(conn: socket.socket, request: Request) -> None:
        conn.sendall(
            f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {elsewhere.url}\r\nContent-Length: 0\r\n\r\n".encode()
        )

    _allow_private(settings)
    _run_with_hook(run)
    receiver = receivers(redirect)
    delivery = _delivery(run, receiver.url)
    assert posts.attempt(delivery.pk) == 60.0
    delivery.refresh_from_db()
    assert delivery.last_error.startswith("HTTP 307 Temporary Redirect (redirects are not followed")
    assert len(receiver.requests) == 1 and elsewhere.connections == 0


# --- signatures ---------------------------------------------------------------------------------------
def _documented_verify() -> Callable[..., bool]:
    """The receiver's recipe, as docs/website.md gives it."""
    text = (ROOT / "docs/website.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text[text.index("### Webhooks") :], re.S)[:1]
    found: dict = {}
    exec(code, found)
    return found["verify"]


@pytest.mark.django_db
def test_every_post_is_signed_and_verifies_with_the_documented_recipe(run, settings, hook_settings, receivers):
    from server.notices import delivery as posts

    verify = _documented_verify()
    receiver = receivers(lambda conn, request: conn.sendall(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n"))
    _allow_private(settings)
    _run_with_hook(run)
    secret = run.webhook_secret
    delivery = _delivery(run, receiver.url)
    posts.attempt(delivery.pk)
    type(delivery).objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    time.sleep(1.1)  # the second attempt's timestamp is a later second
    posts.attempt(delivery.pk)
    first, second = receiver.requests
    assert first.headers["Content-Type"] == "application/json" and json.loads(first.body)["event"] == "accepted"
    for request in (first, second):
        assert verify(secret, request.headers, request.body)
        assert not verify(secret, request.headers, request.body.replace(b"accepted", b"rejected"))
        assert not verify("whsec_" + base64.b64encode(b"x" * 32).decode(), request.headers, request.body)
        key = base64.b64decode(secret.removeprefix("whsec_"))
        signed = f"{request.headers['webhook-id']}.{request.headers['webhook-timestamp']}.".encode() + request.body
        assert (
            request.headers["webhook-signature"]
            == "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        )
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == f"msg_{delivery.message_id.hex}"
    assert int(second.headers["webhook-timestamp"]) > int(first.headers["webhook-timestamp"])
    replayed = {k.lower(): v for k, v in first.headers.items()}
    assert verify(secret, replayed, first.body)
    assert not verify(secret, replayed, first.body, tolerance=-1)  # a post replayed later is refused


# --- attempts lost with their process ---------------------------------------------------------------------
def _work() -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", stdout=open("/dev/null", "w"))  # noqa: SIM115


@pytest.mark.django_db
def test_the_sweep_a_new_process_runs_delivers_each_lost_delivery_once(run, settings, hook_settings, receivers):
    from server.notices import tasks
    from server.notices.models import WebhookDelivery

    receiver = receivers()
    _allow_private(settings)
    _run_with_hook(run)
    now = timezone.now()
    never = _delivery(run, receiver.url)  # recorded; its process ended before the attempt began
    cut = _delivery(run, receiver.url, attempts=1, claimed_until=now - timedelta(seconds=1))  # ended during it
    held = _delivery(run, receiver.url, attempts=1, claimed_until=now + timedelta(minutes=1))  # under way elsewhere
    later = _delivery(run, receiver.url, attempts=1, next_attempt_at=now + timedelta(minutes=5))  # a retry, not due
    last = _delivery(run, receiver.url, attempts=3, claimed_until=now - timedelta(seconds=1))  # its last one, cut
    assert tasks.sweep() is not None  # a pending one falls due later
    assert tasks.sweep() is not None  # a second sweep (another process) finds nothing to post
    statuses = dict(WebhookDelivery.objects.values_list("id", "status"))
    assert len(receiver.requests) == 2
    assert (statuses[never.pk], statuses[cut.pk]) == ("delivered", "delivered")
    assert (statuses[held.pk], statuses[later.pk], statuses[last.pk]) == ("pending", "pending", "failed")
    assert "never finished" in WebhookDelivery.objects.get(pk=last.pk).last_error


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the worker closes its connections
def test_a_worker_that_stopped_during_an_attempt_leaves_it_to_the_queued_sweep(run, settings, receivers):
    from django_tasks_db.models import DBTaskResult

    from server.notices.models import WebhookDelivery
    from server.notices.tasks import deliver_webhook, sweep_webhooks
    from server.ratings.models import NetworkEvent
    from tests.server.test_notices import _accepted_network

    settings.SENTE_WEBHOOK = {"timeout_seconds": 5.0, "backoff_seconds": 60.0, "attempts": 3, "allow_private": True}
    receiver = receivers()
    _run_with_hook(run, receiver.url)
    NetworkEvent.objects.create(network=_accepted_network(run), kind=NetworkEvent.Kind.ACCEPTED)
    delivery = WebhookDelivery.objects.get()
    # The worker took the task, claimed the delivery and was killed: the task stays "running".
    DBTaskResult.objects.filter(task_path=deliver_webhook.module_path).update(status="RUNNING")
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        attempts=1, claimed_until=timezone.now() - timedelta(seconds=1)
    )
    sweeps = DBTaskResult.objects.filter(task_path=sweep_webhooks.module_path, status="READY")
    _work()  # the new worker: the sweep is not due yet
    assert receiver.requests == [] and sweeps.count() == 1
    sweeps.update(run_after=timezone.now())  # five minutes pass
    _work()
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 2 and len(receiver.requests) == 1
    assert sweeps.count() == 1  # queued before it worked, in case this worker stopped too
    sweeps.update(run_after=timezone.now())
    _work()
    assert len(receiver.requests) == 1 and sweeps.count() == 0  # nothing pending: the sweeps end


@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # gunicorn's processes see the rows
def test_a_restarted_web_process_without_a_worker_posts_what_its_predecessor_left_once(run, receivers, tmp_path):
    from django.db import connection

    from server.notices.models import WebhookDelivery
    from server.platform.processes import database_url

    receiver = receivers()
    _run_with_hook(run, receiver.url)
    left = _delivery(run, receiver.url)  # recorded by a process that was recycled before its thread posted
    env = {"SENTE_TASKS": "immediate", "SENTE_WEBHOOK_ALLOW_PRIVATE": "1", "SENTE_WARM_UP": "0"}
    with LiveServer(database_url(connection.settings_dict), tmp_path, workers=2, env=env) as server:
        import requests

        for _ in range(6):  # both workers serve a first request and start sweeping
            requests.get(server.url + "/healthz", timeout=10)
        assert receiver.arrived.wait(30)
        deadline = time.monotonic() + 30
        while WebhookDelivery.objects.get(pk=left.pk).status != "delivered" and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2)
    assert WebhookDelivery.objects.get(pk=left.pk).status == "delivered" and len(receiver.requests) == 1
