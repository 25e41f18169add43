"""Runs: creation, versioned settings, the runs API, the run admin page and the createrun command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from common import __version__
from common.settings import RunSettings, SettingsError
from server.accounts.models import User
from server.networks.models import Network
from server.runs.models import Run, RunSettingsVersion, create_run
from tests.server import helpers


# --- create_run and set_settings ------------------------------------------------------------------------
def test_create_run_makes_version_1_and_the_random_network(run):
    """create_run makes settings version 1 (the canonical document) and the accepted random network."""
    assert run.status == Run.Status.ACTIVE
    assert run.min_client_version == __version__
    versions = list(run.settings_versions.all())
    assert [v.version for v in versions] == [1]
    assert versions[0].document == helpers.SETTINGS.to_dict()
    assert versions[0].note == "initial settings"
    assert run.current_settings().settings == helpers.SETTINGS
    networks = list(run.networks.all())
    assert len(networks) == 1
    random_net = networks[0]
    assert random_net.name == f"{run.name}-random"
    assert random_net.is_random
    assert random_net.state == Network.State.ACCEPTED
    assert not random_net.file
    assert run.selfplay_network() == random_net
    assert Run.objects.current() == run


def test_create_run_with_no_document_uses_the_defaults(db):
    """create_run without a document stores the full default settings."""
    run = create_run("defaults")
    assert run.current_settings().document == RunSettings().to_dict()


def test_create_run_with_bad_settings_makes_nothing(db):
    """A bad document is refused with SettingsError and leaves no run, version or network behind."""
    with pytest.raises(SettingsError) as e:
        create_run("broken", {"selfplay": {"visits": -1}})
    assert e.value.path == "selfplay.visits"
    assert not Run.objects.filter(name="broken").exists()
    assert not Network.objects.filter(name="broken-random").exists()
    assert RunSettingsVersion.objects.count() == 0


@pytest.mark.parametrize("name", ["Upper", "-dash", "with space", "x" * 33, ""])
def test_create_run_refuses_bad_names(db, name):
    """Run names are lower-case letters, digits and '-', at most 32 characters."""
    with pytest.raises(ValidationError):
        create_run(name)
    assert Run.objects.count() == 0


def test_create_run_refuses_a_bad_min_client_version(db):
    """The minimum client version must be a version number."""
    with pytest.raises(ValidationError):
        create_run("vers", min_client_version="latest")
    assert not Run.objects.filter(name="vers").exists()


def test_create_run_refuses_a_taken_name(run):
    """Two runs cannot share a name."""
    with pytest.raises(ValidationError):
        create_run(run.name)


def test_set_settings_same_document_keeps_the_version(run):
    """Setting the current document again returns the current version and makes no new one."""
    current = run.current_settings()
    again = run.set_settings(helpers.SETTINGS.to_dict())
    assert again.pk == current.pk
    assert run.settings_versions.count() == 1


def test_set_settings_equivalent_document_keeps_the_version(db):
    """A document that means the same settings (defaults left out, ints for floats) is no change."""
    run = create_run("equiv", RunSettings().to_dict())
    assert run.set_settings({}).version == 1
    assert run.set_settings({"selfplay": {"komi_mean": 7}}).version == 1
    assert run.settings_versions.count() == 1


def test_set_settings_change_makes_a_new_version(run, alice):
    """A changed document becomes version 2, with its author and note; version 1 is kept as it was."""
    user, _ = alice
    document = helpers.SETTINGS.to_dict()
    document["selfplay"]["visits"] = 40
    version = run.set_settings(document, user=user, note="more visits")
    assert version.version == 2
    assert version.created_by == user
    assert version.note == "more visits"
    assert version.document["selfplay"]["visits"] == 40
    assert run.current_settings().pk == version.pk
    assert run.settings_versions.get(version=1).document == helpers.SETTINGS.to_dict()
    # back to the old document: a third version, not a return to version 1
    assert run.set_settings(helpers.SETTINGS.to_dict()).version == 3


def test_set_settings_stores_the_canonical_document(run):
    """A partial document is stored complete (every key with its value)."""
    version = run.set_settings({"gating": {"rule": "sprt"}})
    assert version.document == RunSettings.from_dict({"gating": {"rule": "sprt"}}).to_dict()
    assert version.document["selfplay"] == RunSettings().selfplay.to_dict()


def _settings_migration():
    import importlib

    return importlib.import_module("migrations.runs.0003_settings_keep_earlier_rules")


def test_stored_documents_keep_the_rules_their_runs_played(run):
    """A document stored before territory scoring and rectangles were drawn keeps area scoring on
    square boards, and its run's games go on as before; a document that leaves out the rules lists
    keeps the earlier defaults' lists."""
    migration = _settings_migration()
    earlier = RunSettings().to_dict()
    for part in ("selfplay", "rating"):
        del earlier[part]["rules"]["scoring"]
        earlier[part]["rules"].update(ko=["POSITIONAL"], tax=["SEKI"], button=[True])
    del earlier["selfplay"]["rectangle_prob"]
    kept = RunSettings.from_dict(migration._keep(earlier))
    for rules in (kept.selfplay.rules, kept.rating.rules):
        assert (rules.scoring, rules.ko, rules.tax, rules.button) == (("AREA",), ("POSITIONAL",), ("SEKI",), (True,))
    assert kept.selfplay.rectangle_prob == 0.0
    bare = RunSettings.from_dict(migration._keep({"gating": {"rule": "sprt"}}))
    assert bare.selfplay.rules.scoring == ("AREA",) and bare.selfplay.rules.ko == ("POSITIONAL", "SITUATIONAL")
    assert bare.selfplay.rules.tax == ("NONE",) and bare.selfplay.rules.button == (False,)
    assert bare.gating.rule == "sprt"
    # Back: the earlier settings cannot say territory scoring, so such a document stops the way back.
    assert "scoring" not in migration._drop(kept.to_dict(), "v1")["selfplay"]["rules"]
    with pytest.raises(RuntimeError, match="TERRITORY"):
        migration._drop(RunSettings().to_dict(), "run x settings v2")


def test_migrating_the_stored_versions_keeps_the_run_on_its_rules(run):
    migration = _settings_migration()
    version = run.current_settings()
    document = dict(version.document)
    selfplay = dict(document["selfplay"], rules=dict(document["selfplay"]["rules"]))
    del selfplay["rules"]["scoring"], selfplay["rectangle_prob"]
    RunSettingsVersion.objects.filter(pk=version.pk).update(document=dict(document, selfplay=selfplay))
    from django.apps import apps

    migration.keep_earlier_rules(apps, None)
    stored = RunSettingsVersion.objects.get(pk=version.pk).document
    assert stored["selfplay"]["rules"]["scoring"] == ["AREA"] and stored["selfplay"]["rectangle_prob"] == 0.0
    assert stored["rating"]["rules"] == document["rating"]["rules"]  # it said its scoring already
    assert RunSettings.from_dict(stored).selfplay.rules.scoring == ("AREA",)


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"selfplay": {"visits": 0}}, "selfplay.visits"),
        ({"selfplay": {"visits": "many"}}, "selfplay.visits"),
        ({"selfplay": {"visits": 10, "cheap_visits": 20}}, "selfplay.cheap_visits"),
        ({"bogus": 1}, "bogus"),
        ({"selfplay": {"vists": 5}}, "selfplay.vists"),
        ({"rating": {"komi": 7.3}}, "rating.komi"),
        ({"gating": {"rule": "coin"}}, "gating.rule"),
        ({"selfplay": {"search": {"cpuct": -1}}}, "selfplay.search.cpuct"),
        ({"selfplay": []}, "selfplay"),
        ({"training": {"architecture": "b99c7"}}, "training.architecture"),
        ({"training": {"next_architecture": "b6c96"}}, "training.next_architecture"),
        ({"training": {"window_alpha": 0}}, "training.window_alpha"),
        ({"training": {"export_every": 100, "snapshot_every": 200}}, "training.export_every"),
        ({"training": {"holdout_one_in": 1}}, "training.holdout_one_in"),
        ({"training": {"ema_decay": 1.0}}, "training.ema_decay"),
        ({"training": {"early_lr_samples": -1}}, "training.early_lr_samples"),
        ({"training": {"early_lr_factor": 0}}, "training.early_lr_factor"),
        ({"training": {"early_lr_factor": 3}}, "training.early_lr_factor"),
    ],
)
def test_set_settings_refuses_bad_documents(run, document, path):
    """A bad document raises SettingsError naming the key, and makes no version."""
    with pytest.raises(SettingsError) as e:
        run.set_settings(document)
    assert e.value.path == path
    assert path in str(e.value)
    assert run.settings_versions.count() == 1


# --- API --------------------------------------------------------------------------------------------
def test_run_list(run):
    """GET /api/v1/runs/ lists every run, newest first, with its current settings, to anyone."""
    create_run("second", {})
    response = APIClient().get("/api/v1/runs/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert [r["name"] for r in body["results"]] == ["second", run.name]
    first = body["results"][1]
    assert first["status"] == "active"
    assert first["settings_version"] == 1
    assert first["settings"] == helpers.SETTINGS.to_dict()
    assert first["min_client_version"] == __version__


def test_run_detail(run):
    """GET /api/v1/runs/<name>/ shows the run with its newest settings version."""
    document = helpers.SETTINGS.to_dict()
    document["selfplay"]["visits"] = 30
    run.set_settings(document)
    response = APIClient().get(f"/api/v1/runs/{run.name}/")
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == run.name
    assert body["settings_version"] == 2
    assert body["settings"]["selfplay"]["visits"] == 30


def test_run_detail_unknown(db):
    """An unknown run gets 404 with the JSON error body."""
    response = APIClient().get("/api/v1/runs/nosuch/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_current_run(run):
    """GET /api/v1/runs/current/ names the active run, its settings version and its random network."""
    response = APIClient().get("/api/v1/runs/current/")
    assert response.status_code == 200
    assert response.json() == {
        "run": run.name,
        "status": "active",
        "min_client_version": run.min_client_version,
        "max_client_version": None,
        "client_builds": [],
        "newest_client_version": __version__,  # the server's own release, unless set otherwise
        "client_upgrade": "pipx upgrade sente",
        "settings_version": 1,
        "games_per_task": 256,
        "gating": False,
        "network": helpers.random_network_ref(run.name),
    }


def test_the_newest_client_release_is_the_operators_and_a_bad_one_is_refused_at_start(run, settings):
    settings.SENTE_NEWEST_CLIENT_VERSION, settings.SENTE_CLIENT_UPGRADE = "9.1.0", "pip install -U sente"
    answer = APIClient().get("/api/v1/runs/current/").json()
    assert (answer["newest_client_version"], answer["client_upgrade"]) == ("9.1.0", "pip install -U sente")
    refused = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "server.settings", "SENTE_NEWEST_CLIENT_VERSION": "newest"},
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0
    assert "SENTE_NEWEST_CLIENT_VERSION='newest': must be a version such as 1.4.0" in refused.stderr


def test_current_run_is_the_newest_active(run):
    """The newest active run is current; a paused or finished run never is."""
    newer = create_run("newer", {})
    assert APIClient().get("/api/v1/runs/current/").json()["run"] == "newer"
    newer.status = Run.Status.PAUSED
    newer.save()
    assert APIClient().get("/api/v1/runs/current/").json()["run"] == run.name
    run.status = Run.Status.FINISHED
    run.save()
    response = APIClient().get("/api/v1/runs/current/")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "no_run"
    assert error["message"]


def test_no_current_run(db):
    """With no run at all, /api/v1/runs/current/ gets 404 with code no_run."""
    response = APIClient().get("/api/v1/runs/current/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "no_run"


def test_runs_api_is_read_only(run, alice):
    """Even a signed-in user cannot create or change runs through the API."""
    _, client = alice
    assert client.post("/api/v1/runs/", {"name": "mine"}, format="json").status_code == 405
    assert client.patch(f"/api/v1/runs/{run.name}/", {"status": "paused"}, format="json").status_code == 405
    run.refresh_from_db()
    assert run.status == "active"


# --- admin ------------------------------------------------------------------------------------------
@pytest.fixture
def staff(db) -> Client:
    user = User.objects.create_user(
        "boss", "boss@example.org", "a long enough password", is_staff=True, is_superuser=True
    )
    client = Client()
    client.force_login(user)
    return client


def _change_url(run) -> str:
    return f"/admin/runs/run/{run.pk}/change/"


def _form_data(response) -> dict:
    """The POST data of an admin change form as the page shows it (fields and inline formsets)."""
    data = {}
    form = response.context["adminform"].form
    for name in form.fields:
        value = form[name].value()
        if value is not None:
            data[name] = value
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        management = formset.management_form
        for name in management.fields:
            data[management.add_prefix(name)] = management[name].value()
        for f in formset.forms:
            for name in f.fields:
                value = f[name].value()
                if value is not None:
                    data[f.add_prefix(name)] = value
    return data


def test_admin_change_page_shows_the_settings(staff, run):
    """The run's change page shows the current settings document as JSON."""
    response = staff.get(_change_url(run))
    assert response.status_code == 200
    shown = json.loads(response.context["adminform"].form["settings_document"].value())
    assert shown == helpers.SETTINGS.to_dict()


def test_admin_needs_staff(run, alice):
    """A normal user cannot open the run admin."""
    user, _ = alice
    client = Client()
    client.force_login(user)
    response = client.get(_change_url(run))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_admin_edit_settings_makes_version_2(staff, run):
    """Editing the settings JSON in the admin saves a new version with the editor and the note."""
    page = staff.get(_change_url(run))
    data = _form_data(page)
    document = json.loads(data["settings_document"])
    document["selfplay"]["visits"] = 48
    data["settings_document"] = json.dumps(document)
    data["settings_note"] = "more visits"
    response = staff.post(_change_url(run), data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    versions = list(run.settings_versions.order_by("version"))
    assert [v.version for v in versions] == [1, 2]
    assert versions[1].document["selfplay"]["visits"] == 48
    assert versions[1].note == "more visits"
    assert versions[1].created_by.username == "boss"
    assert versions[0].document == helpers.SETTINGS.to_dict()
    # the page now shows version 2
    shown = json.loads(staff.get(_change_url(run)).context["adminform"].form["settings_document"].value())
    assert shown["selfplay"]["visits"] == 48


def test_admin_save_unchanged_makes_no_version(staff, run):
    """Saving the form with the settings as they are (other fields changed) makes no new version."""
    data = _form_data(staff.get(_change_url(run)))
    data["description"] = "now with a description"
    data["status"] = "paused"
    response = staff.post(_change_url(run), data)
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.description == "now with a description"
    assert run.status == "paused"
    assert run.settings_versions.count() == 1


def test_admin_reformatted_settings_make_no_version(staff, run):
    """The same settings written differently (compact JSON, keys reordered) are no change."""
    data = _form_data(staff.get(_change_url(run)))
    document = json.loads(data["settings_document"])
    data["settings_document"] = json.dumps(dict(reversed(list(document.items()))), separators=(",", ":"))
    assert staff.post(_change_url(run), data).status_code == 302
    assert run.settings_versions.count() == 1


def test_admin_invalid_json_shows_an_error(staff, run):
    """Invalid JSON is shown as an error on the form and makes no version."""
    data = _form_data(staff.get(_change_url(run)))
    data["settings_document"] = '{"selfplay": {"visits": 40'
    response = staff.post(_change_url(run), data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "settings_document" in errors
    assert "not valid JSON" in errors["settings_document"][0]
    assert "not valid JSON" in response.content.decode()
    assert run.settings_versions.count() == 1


def test_admin_invalid_settings_show_the_key(staff, run):
    """Valid JSON with a bad setting shows an error naming the key and makes no version."""
    data = _form_data(staff.get(_change_url(run)))
    data["settings_document"] = json.dumps({"selfplay": {"visits": 0}})
    response = staff.post(_change_url(run), data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "selfplay.visits" in errors["settings_document"][0]
    assert run.settings_versions.count() == 1


def test_admin_add_run(staff, db):
    """Adding a run in the admin makes it with settings version 1 and its random network."""
    page = staff.get("/admin/runs/run/add/")
    assert page.status_code == 200
    data = _form_data(page)
    data.update(
        name="fromadmin",
        description="made in the admin",
        status="active",
        min_client_version=__version__,
        settings_document=json.dumps({"selfplay": {"visits": 50, "cheap_visits": 10}}),
    )
    response = staff.post("/admin/runs/run/add/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    run = Run.objects.get(name="fromadmin")
    assert run.description == "made in the admin"
    assert [v.version for v in run.settings_versions.all()] == [1]
    assert run.current_settings().document["selfplay"]["visits"] == 50
    assert run.current_settings().created_by.username == "boss"
    assert Network.objects.get(name="fromadmin-random").is_random


def test_admin_sets_the_client_versions_and_builds_the_run_takes(staff, run):
    """The newest version and the builds (one per line) are set in the admin; a bad build or a newest
    version older than the oldest is refused naming the field."""
    data = _form_data(staff.get(_change_url(run)))
    assert data["client_builds"] == ""
    data.update(max_client_version="0.9", client_builds="fedcba9876543210\n0123456789abcdef, 0123456789abcdef")
    assert staff.post(_change_url(run), data).status_code == 302
    run.refresh_from_db()
    assert (run.max_client_version, run.client_builds) == ("0.9", ["0123456789abcdef", "fedcba9876543210"])
    assert _form_data(staff.get(_change_url(run)))["client_builds"] == "0123456789abcdef\nfedcba9876543210"
    for field, value, words in (
        ("client_builds", "0123456789ABCDEF", "16 hex digits"),
        ("max_client_version", "0.0.1", "older than the minimum"),
    ):
        response = staff.post(_change_url(run), dict(data, **{field: value}))
        assert response.status_code == 200
        assert words in response.context["adminform"].form.errors[field][0]


def test_admin_add_paused_run(staff, db):
    """A run added with status paused is paused."""
    data = _form_data(staff.get("/admin/runs/run/add/"))
    data.update(name="quiet", status="paused", min_client_version=__version__)
    assert staff.post("/admin/runs/run/add/", data).status_code == 302
    assert Run.objects.get(name="quiet").status == "paused"
    assert Run.objects.current() is None


# --- createrun ----------------------------------------------------------------------------------------
def test_createrun_defaults(db):
    """createrun NAME makes an active run with the default settings as version 1 and its random network."""
    out = StringIO()
    call_command("createrun", "cmdrun", stdout=out)
    run = Run.objects.get(name="cmdrun")
    assert run.status == "active"
    assert run.current_settings().version == 1
    assert run.current_settings().document == RunSettings().to_dict()
    assert Network.objects.get(name="cmdrun-random").is_random
    assert "cmdrun" in out.getvalue()
    assert "cmdrun-random" in out.getvalue()


def test_createrun_with_a_settings_file(db, tmp_path):
    """--settings-file, --description and --min-client-version are used."""
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(helpers.SETTINGS.to_dict()))
    call_command(
        "createrun",
        "filed",
        "--settings-file",
        str(path),
        "--description",
        "from a file",
        "--min-client-version",
        "0.0.9",
        stdout=StringIO(),
    )
    run = Run.objects.get(name="filed")
    assert run.current_settings().document == helpers.SETTINGS.to_dict()
    assert run.description == "from a file"
    assert run.min_client_version == "0.0.9"


def test_createrun_with_the_clients_it_takes(db):
    call_command(
        "createrun", "pinned", "--max-client-version", "0.2", "--client-build", "0123456789abcdef", stdout=StringIO()
    )
    run = Run.objects.get(name="pinned")
    assert (run.max_client_version, run.client_builds) == ("0.2", ["0123456789abcdef"])


def test_runclients_shows_and_changes_what_a_run_takes(run):
    """manage.py runclients: the versions and builds a run takes, shown; changed with options; a bad
    value is refused naming the field, and nothing changes."""

    def runclients(*args) -> str:
        out = StringIO()
        call_command("runclients", run.name, *args, stdout=out)
        return out.getvalue()

    assert "any build" in runclients() and f"{__version__} to any newer" in runclients()
    out = runclients(
        "--min-version", "0.1", "--max-version", "0.4", "--build", "0123456789abcdef", "--add-build", "fedcba9876543210"
    )
    assert "0.1 to 0.4, builds 0123456789abcdef, fedcba9876543210" in out
    runclients("--remove-build", "0123456789abcdef", "--no-max-version")
    run.refresh_from_db()
    assert (run.min_client_version, run.max_client_version, run.client_builds) == ("0.1", "", ["fedcba9876543210"])
    for args, needle in (
        (["--add-build", "xyz"], "client_builds"),
        (["--max-version", "0.0.1"], "older than"),
        (["--remove-build", "0123456789abcdef"], "not among"),
        (["--any-build", "--build", "0123456789abcdef"], "--any-build"),
    ):
        with pytest.raises(CommandError, match=needle):
            runclients(*args)
    run.refresh_from_db()
    assert run.client_builds == ["fedcba9876543210"]
    assert "any build" in runclients("--any-build")
    with pytest.raises(CommandError, match="no run"):
        call_command("runclients", "nosuch", stdout=StringIO())


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"selfplay": {"visits": 0}}', "selfplay.visits"),
        ('{"nonsense": true}', "nonsense"),
        ('{"selfplay": ', "settings file"),
        ("[1, 2]", "settings file"),
    ],
)
def test_createrun_bad_settings_file(db, tmp_path, content, needle):
    """A settings file that is not valid JSON or not valid settings is a CommandError, and no run is made."""
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError) as e:
        call_command("createrun", "badfile", "--settings-file", str(path), stdout=StringIO())
    assert needle in str(e.value)
    assert not Run.objects.filter(name="badfile").exists()
    assert not Network.objects.filter(name="badfile-random").exists()


def test_createrun_missing_settings_file(db, tmp_path):
    """A settings file that does not exist is a CommandError."""
    with pytest.raises(CommandError):
        call_command("createrun", "nofile", "--settings-file", str(tmp_path / "absent.json"), stdout=StringIO())
    assert not Run.objects.filter(name="nofile").exists()


def test_createrun_existing_name(run):
    """createrun with a taken name is a CommandError and changes nothing."""
    with pytest.raises(CommandError, match="exists already"):
        call_command("createrun", run.name, stdout=StringIO())
    assert run.settings_versions.count() == 1


def test_createrun_bad_name(db):
    """A name the run model refuses is a CommandError."""
    with pytest.raises(CommandError):
        call_command("createrun", "Bad Name", stdout=StringIO())
    assert Run.objects.count() == 0
