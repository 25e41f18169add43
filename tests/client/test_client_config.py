"""The contributing client's settings: file, environment and flags in that order, kept owner-only."""

from __future__ import annotations

import json
import stat
import sys

import pytest

from client.contribute.config import ClientConfig, ConfigError, load, parse_hours, save, within_hours


def test_the_file_then_the_environment_then_the_flags(tmp_path):
    path = tmp_path / "client.json"
    save(ClientConfig(server="https://sente.example.org", username="alice", token="t-file", parallel=8), path)
    config = load(path, environ={"SENTE_TOKEN": "t-env", "SENTE_PARALLEL": "16"}, flags={"parallel": 4, "device": None})
    assert (config.server, config.username, config.token, config.parallel) == (
        "https://sente.example.org",
        "alice",
        "t-env",
        4,
    )
    assert config.device is None and config.instance_id.startswith("sente-")
    assert load(tmp_path / "none.json", environ={}).server is None  # no file yet: nothing set


def test_the_file_keeps_the_token_for_its_owner_only(tmp_path):
    path = tmp_path / "sub" / "client.json"
    save(ClientConfig(server="http://localhost:8000", username="alice", token="secret-token"), path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert data["token"] == "secret-token" and "password" not in data
    first_id = data["instance_id"]
    save(load(path, environ={}), path)  # the installation keeps its id
    assert json.loads(path.read_text())["instance_id"] == first_id


@pytest.mark.parametrize(
    "content, environ, flags, message",
    [
        ('{"parallel": "many"}', {}, {}, r"client.json: parallel: 'many' is not a whole number"),
        ('{"parallel": true}', {}, {}, r"client.json: parallel: True is not a whole number"),
        ('{"colour": "blue"}', {}, {}, "unknown setting 'colour'"),
        ("[1, 2]", {}, {}, "expected a JSON object"),
        ("{oops", {}, {}, "is not JSON"),
        (
            "{}",
            {"SENTE_SERVER": "sente.example.org"},
            {},
            "environment variable SENTE_SERVER: 'sente.example.org' is not",
        ),
        ("{}", {}, {"device": "gpu0"}, "--device: 'gpu0' is not a device"),
        ("{}", {}, {"parallel": 0}, "--parallel: 0 must be a whole number of games, at least 1"),
        ('{"games": 2.5}', {}, {}, r"client.json: games: 2.5 must be a whole number of games"),
        ("{}", {"SENTE_ONLY": "training"}, {}, "environment variable SENTE_ONLY: 'training' is not one of selfplay"),
        ("{}", {}, {"gpu_share": "0"}, r"--gpu-share: '0' is not a share of the GPU"),
        ("{}", {"SENTE_PRECISION": "int8"}, {}, r"SENTE_PRECISION: 'int8' is not one of auto, fp32, fp16, bf16"),
        ("{}", {}, {"gpu_share": "1.5"}, r"--gpu-share: '1.5' is not a share of the GPU"),
        ("{}", {}, {"proxy": "proxy:3128"}, "--proxy: 'proxy:3128' is not an http:// or https:// address"),
        ("{}", {}, {"mirror": "https://m.example.org/"}, r"--mirror: .* names no file: put \{name\} or \{sha256\}"),
        ('{"hours": "22"}', {}, {}, r"client.json: hours: '22': '22' is not a span such as 22-7"),
        ("{}", {}, {"hours": "9:75-10"}, r"--hours: '9:75-10': '9:75' is not a time of day"),
        ("{}", {"SENTE_HOURS": "8-25"}, {}, r"SENTE_HOURS: '8-25': '25' is not a time of day \(0:00 to 24:00\)"),
        ("{}", {}, {"max_download_mb": "lots"}, r"--max-download-mb: 'lots' is not a number of MiB, at least 1"),
        ('{"max_download_mb": 0.5}', {}, {}, r"client.json: max_download_mb: 0.5 is not a number of MiB"),
    ],
)
def test_bad_settings_name_their_source(tmp_path, content, environ, flags, message):
    path = tmp_path / "client.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        load(path, environ=environ, flags=flags)


def test_devices_and_data_directory(tmp_path):
    config = load(
        tmp_path / "none.json", environ={"SENTE_DATA_DIR": str(tmp_path / "data")}, flags={"device": "cuda:0,cuda:1"}
    )
    assert config.device == "cuda:0,cuda:1" and config.data_path() == tmp_path / "data"
    assert load(tmp_path / "none.json", environ={}, flags={"device": "mps"}).device == "mps"  # a Mac's GPU


def test_the_default_folders_are_the_platforms(monkeypatch, tmp_path):
    from client.contribute import config

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    if sys.platform.startswith("linux"):  # the XDG folders; macOS and Windows have their own
        assert config.default_config_path() == tmp_path / "cfg" / "sente" / "client.json"
        assert config.default_data_dir() == tmp_path / "data" / "sente"
    assert config.default_config_path().parent.name == "sente" and config.default_data_dir().name == "sente"


def test_the_volunteers_options_come_from_the_file_the_environment_and_the_flags(tmp_path):
    path = tmp_path / "client.json"
    path.write_text('{"hours": "22-7", "games": 10, "gpu_share": 0.5, "sgf_dir": "/tmp/games"}')
    environ = {"SENTE_ONLY": "rating", "SENTE_PROXY": "http://proxy:3128", "SENTE_GAMES": "20"}
    flags = {"mirror": "https://m.example.org/{sha256}", "watch_file": "/tmp/watch.txt", "gpu_share": "0.25"}
    flags["precision"] = "fp32"
    config = load(path, environ=environ, flags=flags)
    assert config.precision == "fp32"
    assert (config.hours, config.games, config.gpu_share, config.sgf_dir) == ("22-7", 20, 0.25, "/tmp/games")
    assert (config.only, config.proxy) == ("rating", "http://proxy:3128")
    assert (config.mirror, config.watch_file) == ("https://m.example.org/{sha256}", "/tmp/watch.txt")


def test_hours_of_the_day_and_spans_past_midnight():
    night = parse_hours("22-7")
    assert night == [(22 * 60, 7 * 60)]
    assert within_hours(night, 23 * 60) and within_hours(night, 0) and within_hours(night, 6 * 60 + 59)
    assert not within_hours(night, 7 * 60) and not within_hours(night, 12 * 60) and within_hours(night, 22 * 60)
    office = parse_hours("9:30-17:00, 20-24")
    assert office == [(570, 1020), (1200, 1440)]
    assert within_hours(office, 570) and not within_hours(office, 569) and not within_hours(office, 1020)
    assert within_hours(office, 23 * 60 + 59) and not within_hours(office, 0)


def test_the_limit_of_a_download_is_2_gib_unless_set(tmp_path):
    assert ClientConfig().max_download() == 2 << 30
    assert load(tmp_path / "none.json", environ={"SENTE_MAX_DOWNLOAD_MB": "4096"}).max_download() == 4 << 30
