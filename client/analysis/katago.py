"""KataGo's command line, so that programs which run KataGo can run us (the ``sente-katago`` command).

KaTrain starts ``KATAGO analysis -model MODEL -config CFG -analysis-threads N``; other tools add
``-override-config k=v,...`` or ``-quit-without-waiting``; this engine adds ``-device`` and
``-precision``. :func:`parse_katago_command` reads such a command line (one or two leading dashes,
``-flag value`` or ``-flag=value``) and the config files
it names (KataGo's ``key = value`` lines with ``#`` comments): the settings the analysis engine uses
(maxVisits, maxTime, reportAnalysisWinratesAs, analysisPVLen, rootPolicyTemperature,
rootFpuReductionMax; see :class:`client.analysis.query.AnalysisConfig`) are applied, the rest is
named in one warning and ignored. ``version`` prints a line about this engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from client.analysis.engine import DEFAULT_MAX_VISITS
from client.analysis.query import AnalysisConfig
from common.nn.precision import PRECISIONS

MODES = ("analysis", "version")
# Flags that take a value; the others (-quit-without-waiting) are switches.
VALUE_FLAGS = {
    "model",
    "config",
    "analysis-threads",
    "override-config",
    "human-model",
    "device",
    "seed",
    "max-visits",
    "log-file",
    "precision",
}
SWITCHES = {"quit-without-waiting"}


class KataGoCommandError(Exception):
    """A command line or config file that cannot be followed: the message says which part."""


@dataclass
class KataGoCommand:
    mode: str
    model: str | None = None
    config: AnalysisConfig = field(default_factory=AnalysisConfig)
    device: str | None = None
    precision: str = "auto"  # common.nn.precision
    seed: int = 0
    max_visits: int = DEFAULT_MAX_VISITS
    quit_without_waiting: bool = False
    warnings: list[str] = field(default_factory=list)


def read_config_file(path: str | Path) -> dict[str, str]:
    """A KataGo config file's settings: ``key = value`` per line, ``#`` starts a comment."""
    settings: dict[str, str] = {}
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise KataGoCommandError(f"-config: cannot read {path}: {e.strerror}") from None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("@"):  # @include lines name other files: not followed
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise KataGoCommandError(f"-config: {path} line {number}: expected key = value, got {raw.strip()!r}")
        settings[key.strip()] = value.strip().strip('"')
    return settings


def parse_overrides(text: str) -> dict[str, str]:
    """``-override-config``'s ``key=value,key=value``."""
    settings = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise KataGoCommandError(f"-override-config: expected key=value pairs separated by commas, got {part!r}")
        settings[key.strip()] = value.strip()
    return settings


def parse_katago_command(argv: list[str]) -> KataGoCommand:
    """KataGo's ``MODE -flag value ...`` command line as an analysis engine command."""
    if not argv or argv[0].lstrip("-") in ("h", "help"):
        raise KataGoCommandError(
            "usage: sente-katago analysis -model FILE [-config FILE.cfg] "
            "[-override-config key=value,...] [-analysis-threads N] [-quit-without-waiting] "
            "[-device cpu|cuda:N|mps] [-precision auto|fp32|fp16|bf16] "
            "| sente-katago version"
        )
    mode = argv[0]
    if mode not in MODES:
        raise KataGoCommandError(
            f"KataGo's {mode!r} command is not supported by this engine: it speaks KataGo's "
            "analysis protocol only (sente-katago analysis -model FILE -config FILE); for GTP "
            "run python -m client gtp"
        )
    command = KataGoCommand(mode)
    values: dict[str, list[str]] = {}
    ignored = []
    rest = list(argv[1:])
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("-") or arg in ("-", "--"):
            ignored.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if name in SWITCHES:
            values.setdefault(name, []).append("true")
        elif name in VALUE_FLAGS:
            if not eq:
                if not rest:
                    raise KataGoCommandError(f"-{name} needs a value")
                value = rest.pop(0)
            values.setdefault(name, []).append(value)
        else:
            ignored.append(arg)
            if not eq and rest and not rest[0].startswith("-"):
                ignored.append(rest.pop(0))
    if ignored:
        command.warnings.append("ignoring command-line arguments this engine does not use: " + " ".join(ignored))
    if mode == "version":
        return command

    if "model" not in values:
        raise KataGoCommandError("-model FILE is required: the network (ours, .safetensors, or KataGo's .bin.gz)")
    command.model = values["model"][-1]
    settings: dict[str, str] = {}
    for path in values.get("config", []):
        settings.update(read_config_file(path))
    for text in values.get("override-config", []):
        settings.update(parse_overrides(text))
    try:
        command.config, unused = AnalysisConfig().with_settings(settings)
    except ValueError as e:
        raise KataGoCommandError(f"config: {e}") from None
    if unused:
        command.warnings.append("ignoring KataGo settings this engine does not use: " + ", ".join(sorted(unused)))
    for name in ("human-model", "log-file"):
        if name in values:
            command.warnings.append(f"-{name} is not supported by this engine; ignored")
    command.device = values["device"][-1] if "device" in values else None
    command.quit_without_waiting = "quit-without-waiting" in values
    if "precision" in values:
        command.precision = values["precision"][-1]
        if command.precision not in PRECISIONS:
            raise KataGoCommandError(f"-precision: expected one of {', '.join(PRECISIONS)}, got {command.precision!r}")
    for name, attr in (("seed", "seed"), ("max-visits", "max_visits"), ("analysis-threads", None)):
        if name in values:
            try:
                number = int(values[name][-1])
            except ValueError:
                raise KataGoCommandError(f"-{name}: expected an integer, got {values[name][-1]!r}") from None
            if attr is not None:
                setattr(command, attr, number)
    return command
