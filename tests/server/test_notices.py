"""What the server tells people unasked: announcements (every page, the task answer), the Atom feeds of
releases and accepted networks, and the runs' webhooks (posted by the worker after the request,
retried with backoff, given up in the end; a real HTTP server receives them)."""

from __future__ import annotations

import json
import threading
import time
import xml.etree.ElementTree as ET
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from tests.server import helpers
from tests.server.conftest import new_task

ATOM = "{http://www.w3.org/2005/Atom}"


# --- announcements ------------------------------------------------------------------------------------
def _announce(message: str, minutes_from: float = -1, minutes_to: float | None = None, **fields):
    from server.notices.models import Announcement

    now = timezone.now()
    return Announcement.objects.create(
        message=message,
        starts_at=now + timedelta(minutes=minutes_from),
        ends_at=None if minutes_to is None else now + timedelta(minutes=minutes_to),
        **fields,
    )


@pytest.mark.django_db
def test_announcements_show_on_every_page_while_in_force(run):
    web = Client()
    _announce("Maintenance <b>tonight</b> at 22:00 UTC", link="https://example.org/news", level="warning")
    _announce("Not yet", minutes_from=30)
    _announce("Over", minutes_from=-60, minutes_to=-1)
    for url in ("/", "/releases/", "/networks/", "/start/", "/accounts/login/"):
        page = web.get(url).content.decode()
        assert "Maintenance &lt;b&gt;tonight&lt;/b&gt; at 22:00 UTC" in page, url  # text, never markup
        assert 'class="announcement announcement-warning"' in page and 'href="https://example.org/news"' in page
        assert "Not yet" not in page and "Over" not in page


@pytest.mark.django_db
def test_a_change_shows_at_once_and_the_end_takes_it_down(run):
    from server.notices.announcements import in_force

    web = Client()
    assert "announcement" not in web.get("/").content.decode()
    a = _announce("New network released")
    assert "New network released" in web.get("/").content.decode()  # saving forgot the cached list
    a.ends_at = timezone.now() - timedelta(seconds=1)
    a.save()
    assert in_force() == [] and "New network released" not in web.get("/").content.decode()


@pytest.mark.django_db
def test_the_task_answer_carries_them_for_the_clients_panel(run, alice):
    _, client = alice
    assert new_task(client)["announcements"] == []
    end = timezone.now() + timedelta(hours=2)
    _announce("Server moves on Sunday", minutes_to=120, link="https://example.org/move")
    task = new_task(client)
    assert task["announcements"] == [
        {
            "message": "Server moves on Sunday",
            "link": "https://example.org/move",
            "level": "info",
            "ends_at": task["announcements"][0]["ends_at"],
        }
    ]
    assert abs(timezone.datetime.fromisoformat(task["announcements"][0]["ends_at"]) - end) < timedelta(seconds=5)


@pytest.mark.django_db
def test_staff_set_them_in_the_admin_and_the_end_must_follow_the_start(client):
    from server.accounts.models import User
    from server.notices.models import Announcement

    admin = User.objects.create_superuser("boss", "boss@example.org", "a long enough password")
    client.force_login(admin)
    form = {
        "message": "Welcome",
        "link": "",
        "level": "info",
        "starts_at_0": "2026-01-02",
        "starts_at_1": "10:00:00",
        "ends_at_0": "2026-01-01",
        "ends_at_1": "10:00:00",
    }
    refused = client.post("/admin/notices/announcement/add/", form)
    assert refused.status_code == 200 and "must be after the start" in refused.content.decode()
    form["ends_at_0"] = "2026-01-03"
    assert client.post("/admin/notices/announcement/add/", form).status_code == 302
    assert Announcement.objects.get().created_by == admin


# --- feeds ------------------------------------------------------------------------------------------
def _atom(response) -> ET.Element:
    """The feed, checked for what RFC 4287 requires of a feed and of each entry."""
    assert response.status_code == 200 and response["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(response.content)
    assert feed.tag == f"{ATOM}feed"
    for element in (feed, *feed.findall(f"{ATOM}entry")):
        for required in ("id", "title", "updated"):
            assert element.find(f"{ATOM}{required}") is not None and element.find(f"{ATOM}{required}").text, required
        assert any(link.get("rel", "alternate") == "alternate" for link in element.findall(f"{ATOM}link"))
        timezone.datetime.fromisoformat(element.find(f"{ATOM}updated").text)
    ids = [e.find(f"{ATOM}id").text for e in feed.findall(f"{ATOM}entry")]
    assert len(ids) == len(set(ids))
    return feed


@pytest.mark.django_db
def test_the_feeds_are_atom_with_releases_acceptances_and_rollbacks(run, trainer):
    from server.networks.models import Network
    from server.ratings.models import NetworkEvent
    from server.ratings.promotion import staff_decision
    from server.runs.models import create_run

    web = Client()
    empty = _atom(web.get("/feeds/releases.atom"))
    assert empty.findall(f"{ATOM}entry") == []
    response = helpers.upload_network(trainer[1], "net-1", helpers.network_file("net-1"))
    assert response.status_code == 201
    network = Network.objects.get(name="net-1")
    staff_decision(network, "accept", note="strong in tests")
    staff_decision(network, "release")
    NetworkEvent.objects.create(network=network, kind=NetworkEvent.Kind.ROLLED_BACK, note="-80 +- 20 Elo")
    releases = _atom(web.get("/feeds/releases.atom"))
    (entry,) = releases.findall(f"{ATOM}entry")
    assert entry.find(f"{ATOM}title").text == "net-1 released"
    links = {link.get("rel", "alternate"): link for link in entry.findall(f"{ATOM}link")}
    assert links["alternate"].get("href") == "http://testserver/networks/net-1/"
    assert links["enclosure"].get("href") == "http://testserver/api/v1/networks/net-1/file"
    assert links["enclosure"].get("length") == str(network.size_bytes)
    networks = _atom(web.get("/feeds/networks.atom"))
    titles = [e.find(f"{ATOM}title").text for e in networks.findall(f"{ATOM}entry")]
    assert titles == ["net-1 rolled back", "net-1 accepted"]  # newest first; the release is not an acceptance
    assert "strong in tests" in networks.findall(f"{ATOM}entry")[1].find(f"{ATOM}summary").text
    assert f"networks of run {run.name}" in networks.find(f"{ATOM}title").text
    create_run("later", helpers.SETTINGS.to_dict())  # the current run now: nothing accepted yet
    assert _atom(web.get("/feeds/networks.atom")).findall(f"{ATOM}entry") == []
    assert len(_atom(web.get(f"/feeds/networks.atom?run={run.name}")).findall(f"{ATOM}entry")) == 2
    assert web.get("/feeds/networks.atom?run=nope").status_code == 404
    page = web.get("/").content.decode()
    assert 'type="application/atom+xml"' in page and 'href="/feeds/releases.atom"' in page


# --- webhooks ---------------------------------------------------------------------------------------
class HookServer:
    """A real HTTP server taking webhook posts: the first ``fail`` answers are 500, the rest 204; with
    ``hold`` set, every answer waits for it."""

    def __init__(self, fail: int = 0):
        self.posts: list[dict] = []
        self.fail = fail
        self.hold: threading.Event | None = None
        self.received = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.posts.append(body)
                owner.received.set()
                if owner.hold is not None:
                    owner.hold.wait(30)
                status = 500 if len(owner.posts) <= owner.fail else 204
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        if self.hold is not None:
            self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook():
    server = HookServer()
    yield server
    server.close()


def _work() -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", stdout=open("/dev/null", "w"))  # noqa: SIM115


def _accepted_network(run, name: str = "net-1"):
    from server.networks.models import Network
    from server.ratings.models import Gating, Rating

    random_net = run.networks.get(is_random=True)
    network = Network.objects.create(name=name, run=run, parent=random_net, state=Network.State.RATING)
    Rating.objects.create(network=network, elo=120.0, elo_se=10.0, games=200)
    Gating.objects.create(candidate=network, opponent=random_net, rule="fixed", wins=130, draws=2, losses=68)
    return network


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the worker closes its connections
def test_a_release_posts_after_the_request_and_a_failed_post_is_retried(run, hook, settings, client):
    from django_tasks_db.models import DBTaskResult

    from server.accounts.models import User
    from server.notices.models import WebhookDelivery
    from server.notices.tasks import deliver_webhook, sweep_webhooks

    settings.SENTE_WEBHOOK = {"timeout_seconds": 5.0, "backoff_seconds": 0.0, "attempts": 5, "allow_private": True}
    settings.SENTE_PUBLIC_URL = "https://sente.example.org/"
    run.webhook_url = hook.url
    run.save()
    hook.fail = 2
    network = _accepted_network(run)
    admin = User.objects.create_superuser("boss", "boss@example.org", "a long enough password")
    client.force_login(admin)
    response = client.post(
        "/admin/networks/network/",
        {"action": "force_release", "_selected_action": [network.pk], "note": "for KaTrain users", "index": 0},
    )
    assert response.status_code == 302
    assert hook.posts == []  # the request only queued it
    delivery = WebhookDelivery.objects.get()
    queued = DBTaskResult.objects.filter(status="READY")
    assert delivery.status == "pending" and queued.filter(task_path=deliver_webhook.module_path).count() == 1
    assert queued.get(task_path=sweep_webhooks.module_path).run_after > timezone.now()  # for a lost attempt
    _work()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("delivered", 3, "")
    assert len(hook.posts) == 3 and hook.posts[0] == hook.posts[2]
    body = hook.posts[-1]
    assert body["event"] == "released" and body["network"] == "net-1" and body["run"] == run.name
    assert body["url"] == "https://sente.example.org/networks/net-1/" and body["elo"] == 120.0
    assert body["text"] == body["content"] and "released for Go players (Elo +120 ± 20)" in body["text"]
    assert "https://sente.example.org/releases/" in body["text"] and "Note: for KaTrain users" in body["text"]


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_retries_back_off_then_give_up(run, hook, settings, caplog):
    from django_tasks_db.models import DBTaskResult

    from server.notices import delivery as posts
    from server.notices.models import WebhookDelivery
    from server.notices.tasks import deliver_webhook
    from server.ratings.promotion import staff_decision

    settings.SENTE_WEBHOOK = {"timeout_seconds": 5.0, "backoff_seconds": 60.0, "attempts": 3, "allow_private": True}
    run.webhook_url = hook.url
    run.save()
    hook.fail = 100
    network = _accepted_network(run)
    before = timezone.now()
    staff_decision(network, "accept")
    _work()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("pending", 1) and delivery.last_error.startswith("HTTP 500")
    waiting = DBTaskResult.objects.get(status="READY", task_path=deliver_webhook.module_path)
    assert waiting.run_after >= before + timedelta(seconds=59)  # not before the backoff
    _work()
    assert posts.attempt(delivery.pk) is None and len(hook.posts) == 1  # the worker or anyone leaves it until then
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())  # the time comes
    assert posts.attempt(delivery.pk) == 120.0  # the second attempt: the delay doubles
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    with caplog.at_level("ERROR", logger="server.notices.delivery"):
        assert posts.attempt(delivery.pk) is None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, len(hook.posts)) == ("failed", 3, 3)
    assert "given up after 3 attempts" in caplog.text
    assert posts.attempt(delivery.pk) is None and len(hook.posts) == 3  # a failed delivery is not tried again
    assert hook.posts[0]["event"] == "accepted" and "accepted by staff" in hook.posts[0]["text"]


@pytest.mark.django_db
def test_gating_acceptance_and_rollback_post_and_rejection_does_not(run, hook, django_capture_on_commit_callbacks):
    from server.notices import webhooks
    from server.notices.models import WebhookDelivery
    from server.ratings.models import NetworkEvent

    network = _accepted_network(run)
    with django_capture_on_commit_callbacks(execute=True):
        NetworkEvent.objects.create(network=network, kind=NetworkEvent.Kind.ACCEPTED)  # no webhook set
    assert not WebhookDelivery.objects.exists()
    run.webhook_url = hook.url
    run.save()
    with django_capture_on_commit_callbacks(execute=False):
        for kind in (NetworkEvent.Kind.ACCEPTED, NetworkEvent.Kind.REJECTED, NetworkEvent.Kind.ROLLED_BACK):
            NetworkEvent.objects.create(network=network, kind=kind, note="-90 +- 30 Elo against the random net")
    texts = [webhooks.payload(d.event)["text"] for d in WebhookDelivery.objects.order_by("id")]
    assert len(texts) == 2
    assert texts[0].startswith(
        f"Network net-1 of run {run.name} is accepted: 130 wins, 2 draws, 68 losses against {run.name}-random"
    )
    assert (
        f"is rolled back: -90 +- 30 Elo against the random net. {webhooks.public_url('/networks/net-1/')}" in texts[1]
    )


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_without_a_worker_a_thread_posts_and_the_request_never_waits(run, hook, settings, client):
    from server.accounts.models import User
    from server.notices.models import WebhookDelivery

    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    settings.SENTE_WEBHOOK = {**settings.SENTE_WEBHOOK, "allow_private": True}
    run.webhook_url = hook.url
    run.save()
    hook.hold = threading.Event()  # the chat server hangs
    network = _accepted_network(run)
    admin = User.objects.create_superuser("boss", "boss@example.org", "a long enough password")
    client.force_login(admin)
    response = client.post(
        "/admin/networks/network/",
        {"action": "force_release", "_selected_action": [network.pk], "note": "", "index": 0},
    )
    assert response.status_code == 302  # answered while the post hangs (or before it began)
    assert hook.received.wait(10)
    assert WebhookDelivery.objects.get().status == "pending"
    hook.hold.set()
    deadline = time.monotonic() + 10
    while WebhookDelivery.objects.get().status != "delivered" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert WebhookDelivery.objects.get().status == "delivered"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)  # the thread has its own connection
@pytest.mark.parametrize("failing", ["deliver_webhook", "sweep_webhooks"])
def test_when_the_worker_queue_refuses_it_a_thread_posts_the_delivery_once(
    run, hook, settings, monkeypatch, caplog, failing
):
    """With the database worker, queueing the attempt (or its sweep) fails: the process's thread posts
    it, retries it when its first post fails, then ends; the worker finds nothing more to post."""
    from django.db import DatabaseError
    from django_tasks_db import DatabaseBackend

    from server.notices import tasks
    from server.notices.models import WebhookDelivery
    from server.ratings.promotion import staff_decision

    assert tasks._queued()  # the database worker's queue
    settings.SENTE_WEBHOOK = {"timeout_seconds": 5.0, "backoff_seconds": 0.0, "attempts": 5, "allow_private": True}
    real = DatabaseBackend.enqueue

    def enqueue(self, task, args, kwargs):
        if task.module_path == f"server.notices.tasks.{failing}":
            raise DatabaseError("the queue's table is locked")
        return real(self, task, args, kwargs)

    monkeypatch.setattr(DatabaseBackend, "enqueue", enqueue)
    run.webhook_url = hook.url
    run.save()
    hook.fail = 1  # the first post fails: its retry cannot be queued either (or its sweep cannot)
    network = _accepted_network(run)
    with caplog.at_level("ERROR", logger="server.notices.tasks"):
        staff_decision(network, "accept")
        thread = tasks._thread
        assert thread is not None
        thread.join(30)
    assert not thread.is_alive()  # everything posted: the thread ended, leaving the rest to the worker
    assert "a thread of this process posts it" in caplog.text
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, len(hook.posts)) == ("delivered", 2, 2)
    _work()  # whatever was queued finds the delivery made
    assert len(hook.posts) == 2 and WebhookDelivery.objects.get().status == "delivered"
