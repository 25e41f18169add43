"""The production recipe in deploy/, exercised as far as one machine allows: nginx accepts its site
configuration, systemd accepts the units, docker compose accepts the compose file, the backup script
backs up the test database and files, and the smoke script passes against the server under gunicorn."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server import helpers

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _need(program: str, package: str) -> str:
    path = shutil.which(program) or (f"/usr/sbin/{program}" if Path(f"/usr/sbin/{program}").exists() else None)
    if path is None:
        pytest.skip(f"{program} is not installed (Debian package {package}); .ci/run installs it")
    return path


def test_nginx_accepts_the_site(tmp_path):
    nginx = _need("nginx", "nginx")
    _need("openssl", "openssl")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test",
                    "-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")], check=True,
                   capture_output=True)
    snippets = tmp_path / "snippets"
    snippets.mkdir()
    shutil.copy(DEPLOY / "nginx" / "sente-proxy.conf", snippets / "sente-proxy.conf")
    site = (DEPLOY / "nginx" / "sente.conf").read_text()
    site = site.replace("/etc/letsencrypt/live/go.example.org/fullchain.pem", str(tmp_path / "cert.pem"))
    site = site.replace("/etc/letsencrypt/live/go.example.org/privkey.pem", str(tmp_path / "key.pem"))
    site = site.replace("/etc/nginx/snippets/", f"{snippets}/").replace("/var/log/nginx/", f"{tmp_path}/")
    (tmp_path / "sente.conf").write_text(site)
    (tmp_path / "compose.conf").write_text((DEPLOY / "nginx" / "compose.conf").read_text()
                                           .replace("server web:8000", "server 127.0.0.1:8000"))
    for name in ("sente.conf", "compose.conf"):
        main = tmp_path / f"nginx-{name}"
        main.write_text(f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
                        f"http {{\n  access_log {tmp_path}/access.log;\n  include {tmp_path}/{name};\n}}\n")
        done = subprocess.run([nginx, "-t", "-q", "-p", str(tmp_path), "-c", str(main)], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stderr


def test_systemd_accepts_the_units(tmp_path):
    analyze = _need("systemd-analyze", "systemd")
    units = tmp_path / "units"
    units.mkdir()
    for unit in (DEPLOY / "systemd").iterdir():
        text = unit.read_text().replace("/srv/sente/app", str(ROOT)).replace("/etc/sente/sente.env",
                                                                            str(tmp_path / "sente.env"))
        (units / unit.name).write_text(text)
    (units / "sente-trainer@main.service").symlink_to(units / "sente-trainer@.service")
    (tmp_path / "sente.env").write_text((DEPLOY / "sente.env.example").read_text())
    names = sorted(str(p) for p in units.iterdir() if p.name != "sente-trainer@.service")
    done = subprocess.run([analyze, "verify", *names], capture_output=True, text=True,
                          env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"})
    problems = [line for line in done.stderr.splitlines() if str(units) in line or "sente" in line]
    assert done.returncode == 0 and not problems, done.stderr


def test_docker_compose_accepts_the_compose_file(tmp_path):
    compose = shutil.which("docker-compose")
    command = [compose] if compose else None
    if command is None and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        command = ["docker", "compose"]
    if command is None:
        pytest.skip("docker compose is not installed (Debian package docker-compose); .ci/run installs it")
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy)
    shutil.copy(copy / "sente.env.example", copy / "sente.env")
    done = subprocess.run([*command, "-f", str(copy / "docker-compose.yml"), "config"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    for service in ("db:", "redis:", "web:", "worker:", "trainer:", "nginx:", "migrate:"):
        assert f"  {service}" in done.stdout


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_backups_hold_the_database_and_the_files(tmp_path):
    from django.conf import settings
    from django.db import connection

    from server.platform.processes import database_url

    _need("rsync", "rsync")
    if connection.vendor != "postgresql":
        pytest.skip("the backup test needs PostgreSQL (pg_dump)")
    _need("pg_dump", "postgresql-client")
    from server.runs.models import create_run

    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    files = tmp_path / "files"
    (files / "games" / "ab").mkdir(parents=True)
    (files / "games" / "ab" / "game.sgf").write_bytes(b"(;FF[4])")
    env = {**os.environ, "DATABASE_URL": database_url(connection.settings_dict), "STORAGE_URL": files.as_uri(),
           "SENTE_DATA_DIR": str(settings.DATA_DIR), "SENTE_BACKUP_DIR": str(tmp_path / "backups")}
    for _ in range(2):
        done = subprocess.run(["bash", str(DEPLOY / "backup.sh")], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
    backups = sorted(p for p in (tmp_path / "backups").iterdir() if not p.is_symlink())
    assert (tmp_path / "backups" / "latest").resolve() == backups[-1]
    latest = tmp_path / "backups" / "latest"
    assert (latest / "files" / "games" / "ab" / "game.sgf").read_bytes() == b"(;FF[4])"
    listing = subprocess.run(["pg_restore", "--list", str(latest / "database.pgdump")], capture_output=True,
                             text=True, check=True).stdout
    assert "TABLE DATA public runs_run" in listing
    if len(backups) == 2:  # (the same second makes one folder) two backups share unchanged files
        first, last = (b / "files" / "games" / "ab" / "game.sgf" for b in backups)
        assert first.stat().st_ino == last.stat().st_ino


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_smoke_script_passes_against_the_server(server, tmp_path):
    from server.accounts.models import ClientToken, User

    user = User.objects.create_user("smoke", "smoke@example.org", "a long enough password")
    _, token = ClientToken.issue(user, "smoke")
    done = subprocess.run([sys.executable, str(DEPLOY / "smoke.py"), server.url, "--token", token],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for check in ("health", "API schema", "current run", "front page", "metrics", "task round trip"):
        assert f"ok   {check}" in done.stdout
    done = subprocess.run([sys.executable, str(DEPLOY / "smoke.py"), server.url, "--username", "smoke"],
                          input="wrong password\n", capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "FAIL login" in done.stdout
