"""The contributing client's settings: a per-user JSON file, environment variables and flags, each
overriding the one before.

The file (``client.json`` in the platform's folder for a user's settings: on Linux
``$XDG_CONFIG_HOME/sente/``, by default ``~/.config/sente/``; on macOS ``~/Library/Application
Support/sente/``; on Windows ``%LOCALAPPDATA%\\sente\\``; or ``--config FILE``) keeps what setup
learned: the server, the username, the client token (never the password) and a stable id of this
installation, and any other setting of :class:`ClientConfig` the volunteer writes in it; it is
written atomically and readable by its owner only (0600). Every setting but the installation's id
has an environment variable, ``SENTE_`` and its name in capitals (:data:`ENV`). The data directory
(the outbox and the network cache) defaults to the platform's folder for a user's data:
``$XDG_DATA_HOME/sente`` (``~/.local/share/sente``) on Linux, the same as the settings on macOS and
Windows. The folders are platformdirs' names for them.

A bad value names where it came from (the file and key, the variable, or the flag) and what is wrong.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

from client.contribute.bounded import DEFAULT_MAX_DOWNLOAD
from client.contribute.gpuwatch import parse_power, parse_temperature
from client.contribute.priority import PRIORITIES
from common.files import atomic_write
from common.nn.precision import PRECISIONS

APP = "sente"  # the folders' name

ENV = {
    "server": "SENTE_SERVER",
    "username": "SENTE_USERNAME",
    "token": "SENTE_TOKEN",
    "device": "SENTE_DEVICE",
    "parallel": "SENTE_PARALLEL",
    "data_dir": "SENTE_DATA_DIR",
    "games": "SENTE_GAMES",
    "only": "SENTE_ONLY",
    "proxy": "SENTE_PROXY",
    "mirror": "SENTE_MIRROR",
    "sgf_dir": "SENTE_SGF_DIR",
    "watch_file": "SENTE_WATCH_FILE",
    "hours": "SENTE_HOURS",
    "gpu_share": "SENTE_GPU_SHARE",
    "checkpoint_seconds": "SENTE_CHECKPOINT_SECONDS",
    "max_download_mb": "SENTE_MAX_DOWNLOAD_MB",
    "priority": "SENTE_PRIORITY",
    "max_temperature": "SENTE_MAX_TEMPERATURE",
    "max_power": "SENTE_MAX_POWER",
    "pause_when_busy": "SENTE_PAUSE_WHEN_BUSY",
    "precision": "SENTE_PRECISION",
}
ONLY = ("selfplay", "rating")
MIB = 1 << 20


class ConfigError(ValueError):
    """A setting that cannot be used; the message names its source."""


@dataclass(frozen=True)
class ClientConfig:
    server: str | None = None
    username: str | None = None
    token: str | None = None
    instance_id: str | None = None
    device: str | None = None  # "cpu", "cuda:0", "cuda:0,cuda:1", "mps"; None: the GPUs there are, else the CPU
    parallel: int | str | None = None  # games per worker, or "auto" (None: auto; client.contribute.autoparallel)
    data_dir: str | None = None
    games: int | None = None  # stop after this many games (self-play and rating together)
    only: str | None = None  # "selfplay" or "rating"; None: both
    proxy: str | None = None  # an HTTP(S) proxy for every request to the server and the mirror
    mirror: str | None = None  # where networks are downloaded first: a URL with {name} or {sha256}
    sgf_dir: str | None = None  # a copy of every finished game's SGF goes here
    watch_file: str | None = None  # rewritten after each move of one self-play game in play
    hours: str | None = None  # when to play, local time: "22-7", "9:30-17:00,20-23"; None: always
    gpu_share: float | None = None  # the share of the default games at once (0 < share <= 1)
    checkpoint_seconds: float | None = None  # how often a game in play is saved (client.contribute.inplay)
    max_download_mb: float | None = None  # the most any download may bring, in MiB (client.contribute.bounded)
    priority: str | None = None  # the process priority: "low" (None: low) or "normal" (client.contribute.priority)
    max_temperature: float | None = None  # degrees Celsius a GPU may reach (client.contribute.gpuwatch)
    max_power: str | None = None  # watts a GPU may draw, "200", or a share of its limit, "80%"
    pause_when_busy: bool | None = None  # pause a GPU's games while another program uses it
    precision: str | None = None  # the network's precision (common.nn.precision; None: auto)

    def merged(self, values: Mapping[str, object], source: str) -> ClientConfig:
        """These settings with the given ones (None values skipped) on top, each checked."""
        known = {f.name for f in fields(self)}
        changes: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                raise ConfigError(f"{source}: unknown setting {key!r} (known: {', '.join(sorted(known))})")
            if value is not None:
                changes[key] = _checked(key, value, f"{source} {key}" if source.endswith(":") else source)
        return replace(self, **changes)

    def data_path(self) -> Path:
        return Path(self.data_dir) if self.data_dir else default_data_dir()

    def max_download(self) -> int:
        """The most bytes any download may bring."""
        return DEFAULT_MAX_DOWNLOAD if self.max_download_mb is None else int(self.max_download_mb * MIB)


def default_config_path() -> Path:
    return platformdirs.user_config_path(APP, appauthor=False) / "client.json"


def default_data_dir() -> Path:
    return platformdirs.user_data_path(APP, appauthor=False)


def read_file(path: Path) -> ClientConfig:
    """The settings kept in path (empty settings if there is no such file)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return ClientConfig()
    except OSError as e:
        raise ConfigError(f"{path}: cannot be read: {e}") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{path}: is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object of settings")
    return ClientConfig().merged(data, f"{path}:")


def load(
    path: Path | None = None, environ: Mapping[str, str] | None = None, flags: Mapping[str, object] | None = None
) -> ClientConfig:
    """The file's settings, then the environment's, then the flags'."""
    environ = os.environ if environ is None else environ
    config = read_file(path or default_config_path())
    for key, var in ENV.items():
        if environ.get(var):
            config = config.merged({key: environ[var]}, f"environment variable {var}")
    for key, value in (flags or {}).items():
        if value is not None:
            config = config.merged({key: value}, f"--{key.replace('_', '-')}")
    return config


def save(config: ClientConfig, path: Path | None = None) -> Path:
    """Keep the settings in path (owner-only), giving the installation its id if it has none."""
    if config.instance_id is None:
        config = replace(config, instance_id=f"sente-{uuid.uuid4().hex[:16]}")
    data = {k: v for k, v in asdict(config).items() if v is not None}
    return atomic_write(
        path or default_config_path(), (json.dumps(data, indent=2, sort_keys=True) + "\n").encode(), private=True
    )


def _checked(key: str, value: Any, where: str) -> Any:
    if key == "parallel" and isinstance(value, str) and value.strip() == "auto":
        return "auto"
    if key in ("parallel", "games"):
        what = "a whole number of games" + (" or auto" if key == "parallel" else "")
        if isinstance(value, bool):
            raise ConfigError(f"{where}: {value!r} is not {what}")
        try:
            n = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: {value!r} is not {what}") from None
        if n < 1 or (isinstance(value, float) and value != n):
            raise ConfigError(f"{where}: {value!r} must be a whole number of games, at least 1")
        return n
    if key == "gpu_share":
        share = _number(value)
        if share is None or not 0 < share <= 1:
            raise ConfigError(f"{where}: {value!r} is not a share of the GPU: a number above 0, at most 1 (0.5: half)")
        return share
    if key == "max_download_mb":
        mib = _number(value)
        if mib is None or not 1 <= mib < float("inf"):
            raise ConfigError(f"{where}: {value!r} is not a number of MiB, at least 1 (2048: 2 GiB)")
        return mib
    if key == "checkpoint_seconds":
        seconds = _number(value)
        if seconds is None or not 0 < seconds < float("inf"):
            raise ConfigError(f"{where}: {value!r} is not a number of seconds above 0")
        return seconds
    if key == "max_temperature":
        try:
            return parse_temperature(value)
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
    if key == "pause_when_busy":
        if isinstance(value, bool):
            return value
        words = {
            "1": True,
            "true": True,
            "yes": True,
            "on": True,
            "0": False,
            "false": False,
            "no": False,
            "off": False,
        }
        if isinstance(value, str) and value.strip().lower() in words:
            return words[value.strip().lower()]
        raise ConfigError(f"{where}: {value!r} is not true or false")
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {value!r} must be a non-empty text")
    value = value.strip()
    if key == "server" and not value.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: {value!r} is not an http:// or https:// address")
    if key == "device":
        for part in value.split(","):
            if part not in ("cpu", "mps") and not (
                part.startswith("cuda") and part[4:] in ("", *(f":{i}" for i in range(64)))
            ):
                raise ConfigError(
                    f"{where}: {part!r} is not a device (cpu, cuda, cuda:N, mps; several separated by commas)"
                )
    if key == "priority" and value not in PRIORITIES:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(PRIORITIES)}")
    if key == "precision" and value not in PRECISIONS:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(PRECISIONS)}")
    if key == "only" and value not in ONLY:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(ONLY)}")
    if key in ("proxy", "mirror") and not value.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: {value!r} is not an http:// or https:// address")
    if key == "mirror" and "{name}" not in value and "{sha256}" not in value:
        raise ConfigError(f"{where}: {value!r} names no file: put {{name}} or {{sha256}} where the network goes")
    if key == "max_power":
        try:
            parse_power(value)
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
    if key == "hours":
        try:
            parse_hours(value)
        except ValueError as e:
            raise ConfigError(f"{where}: {value!r}: {e}") from None
    return value


def _number(value: Any) -> float | None:
    """A number from the file (a JSON number) or from text (the environment, a flag); None if none."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def parse_hours(text: str) -> list[tuple[int, int]]:
    """The spans of "22-7", "9:30-17:00,20-23" as (start, end) minutes of the day; a span whose
    end is before its start goes past midnight."""
    spans = []
    for part in text.split(","):
        start, sep, end = part.strip().partition("-")
        if not sep:
            raise ValueError(f"{part.strip()!r} is not a span such as 22-7 or 9:30-17:00")
        spans.append((_minute(start), _minute(end)))
    return spans


def _minute(text: str) -> int:
    hour, _, minute = text.strip().partition(":")
    if not hour.isdigit() or (minute and not minute.isdigit()):
        raise ValueError(f"{text.strip()!r} is not a time of day such as 7 or 9:30")
    h, m = int(hour), int(minute or 0)
    if not (0 <= h <= 24 and 0 <= m < 60) or (h == 24 and m):
        raise ValueError(f"{text.strip()!r} is not a time of day (0:00 to 24:00)")
    return h * 60 + m


def within_hours(spans: list[tuple[int, int]], minute_of_day: int) -> bool:
    """Is the minute of the day within one of the spans (its start in, its end out)?"""
    for start, end in spans:
        if start <= end and start <= minute_of_day < end:
            return True
        if start > end and (minute_of_day >= start or minute_of_day < end):
            return True
    return False
