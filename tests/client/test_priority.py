"""The contributing client's process priority: low unless asked otherwise, never raised, inherited by
the processes it starts; a bad setting is refused by name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from client.contribute import config as client_config
from client.contribute.priority import LOW_NICE, set_priority

ROOT = Path(__file__).resolve().parents[2]
# A child that sets the priority asked for, then reports its own niceness and that of a process it starts.
CHILD = """
import os, subprocess, sys
from client.contribute.priority import set_priority
said = set_priority(sys.argv[1])
started = subprocess.run([sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"],
                         capture_output=True, text=True).stdout.strip()
print(said, os.getpriority(os.PRIO_PROCESS, 0), started)
"""


def niceness(priority: str, nice: int = 0) -> list[str]:
    command = [sys.executable, "-c", CHILD, priority]
    if nice:
        command = ["nice", "-n", str(nice), *command]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX niceness")
def test_low_is_nice_10_for_the_client_and_what_it_starts_and_never_raises_a_lower_one():
    assert niceness("low") == ["nice", str(LOW_NICE), str(LOW_NICE), str(LOW_NICE)]
    assert niceness("normal") == ["nice", "0", "0", "0"]
    # Already lower (a service at nice 15): it stays there.
    assert niceness("low", nice=15) == ["nice", "15", "15", "15"]
    with pytest.raises(ValueError, match="priority 'high': expected one of low, normal"):
        set_priority("high")


def test_the_setting_comes_from_the_flag_the_environment_or_the_file_and_a_bad_one_is_named(tmp_path):
    path = tmp_path / "client.json"
    path.write_text('{"priority": "normal"}')
    assert client_config.load(path, environ={}).priority == "normal"
    assert client_config.load(path, environ={"SENTE_PRIORITY": "low"}).priority == "low"
    with pytest.raises(client_config.ConfigError, match="environment variable SENTE_PRIORITY: 'idle' is not one of"):
        client_config.load(path, environ={"SENTE_PRIORITY": "idle"})
    with pytest.raises(client_config.ConfigError, match="--priority: 'highest' is not one of low, normal"):
        client_config.load(path, environ={}, flags={"priority": "highest"})
