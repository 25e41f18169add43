"""The ablation's arms and their runs: the whole platform once per arm and repetition, from the random
network, for the same CPU time, each in a folder of its own.

An arm is a settings document (``server/platform/arms/NAME.json``, or any file of that form):

- ``title`` and ``description``: what it is, for the report;
- ``from`` (optional): the arm it starts from (every built-in arm but ``full`` starts from
  ``full``); without it, the one-machine demo's settings for the board;
- ``settings``: what it changes, a part of a run's settings document merged key by key into the
  one it starts from;
- ``paper`` (optional): ``claim``, what the paper says removing it costs, and ``expect``, "worse" or
  "better" (what that says of this arm against the full method).

An arm runs ``--seeds`` times, each repetition from the random network with a platform of its own.
The platform takes no seed (its self-play draws from the operating system), so a repetition is an
independent run of the arm, not a replay. The K-th repetition's folder is ``DATA/arms/NAME.seedK``
(a suffix that a file URL, the platform's storage, keeps as it is), the first's ``DATA/arms/NAME``
(so an ablation's folder from before repetitions goes on as it was). A folder holds the repetition's
settings document, its platform's data folder (the embedded default: SQLite and local files, so that
a repetition is whole in its folder), the platform's output, ``state.json`` (the CPU time used,
sampled every few seconds with the time and the load average: what a run that resumes starts from,
and what places each generation on the compute axis) and, once it stopped, its accepted generations
(``manage.py generations``).

The CPU time is user and system time summed over every process seen, counted one of two ways (the
ablation's ``--budget``): ``platform``, the platform's whole process tree (web server, worker,
trainer, client), or ``selfplay``, the client's process tree alone (its self-play games, and the
run's rating games it plays beside them), as the paper's section 7.2 counts self-play compute with
training kept up with the data: the trainer, at the platform's normal priority above the client's,
trains every row's samples as they come, whatever its CPU, and once the client's time is up the
client pauses while the trainer trains the rows it has left (``trainer_idle``). Both counts are
kept. On a machine shared with other work an arm still gets its budget, though its processes then
contend with others. Before the first arm, the server's and the search's kernels are compiled (numba
caches them on disk), so that no arm pays for compiling them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from common.files import atomic_write
from common.settings import RunSettings, SettingsError
from server.platform.demo import demo_settings
from server.platform.processes import ROOT, Supervisor, load_average

ARMS_DIR = Path(__file__).resolve().parent / "arms"
# The built-in arms run by default, in the report's order: the full method, then one taken out at a time.
# The other documents in arms/ are built in too, and run when --arms names them (built_in_arms).
BUILT_IN_ARMS = (
    "full",
    "no-pcr",
    "no-forced-playouts",
    "no-aux-targets",
    "no-branching",
    "no-methods-search",
    "mobilenet",
)
REFERENCE_ARM = "full"
EXPECTATIONS = ("worse", "better")
ARM_KEYS = {"title", "description", "from", "settings", "paper"}
SAMPLE_SECONDS = 5.0
# What --cpu-minutes counts: the platform's whole process tree, or its client's alone (self-play).
BUDGETS = ("platform", "selfplay")
# Under the self-play budget, how long the trainer may take to train the rows it has after the
# client's time is up (the client paused meanwhile), and how many idle readings in a row say it has.
CATCH_UP_SECONDS = 1800.0
IDLE_READINGS = 2
# The platform's client finishes its games and delivers them when asked to stop.
STOP_SECONDS = 400.0


class AblationError(ValueError):
    """A bad arm document, a folder that belongs to another ablation, or an arm's platform that failed."""


@dataclass(frozen=True)
class Arm:
    name: str
    title: str
    description: str
    settings: dict  # the whole settings document, checked
    claim: str = ""
    expect: str = ""

    @property
    def architecture(self) -> str:
        return self.settings["training"]["architecture"]


def built_in_arms() -> tuple[str, ...]:
    """Every built-in arm's name: those run by default, then the others (such as the network's size
    for 9x9 on a CPU, ``b3c32`` and ``b4c48``), which run when ``--arms`` names them."""
    others = sorted(path.stem for path in ARMS_DIR.glob("*.json") if path.stem not in BUILT_IN_ARMS)
    return (*BUILT_IN_ARMS, *others)


def arm_path(spec: str) -> Path:
    """A built-in arm's document by name, or a document's path."""
    if spec.endswith(".json") or os.sep in spec or "/" in spec:
        return Path(spec)
    return ARMS_DIR / f"{spec}.json"


def load_arm(spec: str, board: int, _seen: tuple[str, ...] = ()) -> Arm:
    """The arm ``spec`` names (a built-in name or a file) on a ``board`` x ``board`` board."""
    path = arm_path(spec)
    if not path.exists():
        known = ", ".join(built_in_arms())
        raise AblationError(f"arm {spec}: no such arm document ({path}); the built-in arms are {known}")
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise AblationError(f"arm {path}: {e}") from None
    if not isinstance(doc, dict):
        raise AblationError(f"arm {path}: must be a JSON object")
    unknown = sorted(set(doc) - ARM_KEYS)
    if unknown:
        raise AblationError(f"arm {path}: unknown keys {', '.join(unknown)} (known: {', '.join(sorted(ARM_KEYS))})")
    for key in ("title", "description"):
        if not isinstance(doc.get(key), str) or not doc[key].strip():
            raise AblationError(f"arm {path}: {key!r} must be a non-empty string")
    changes = doc.get("settings", {})
    if not isinstance(changes, dict):
        raise AblationError(f"arm {path}: 'settings' must be an object (a part of a run's settings document)")
    paper = doc.get("paper", {})
    if not isinstance(paper, dict) or set(paper) - {"claim", "expect"}:
        raise AblationError(f"arm {path}: 'paper' must be an object with 'claim' and 'expect'")
    if paper.get("expect", "") not in ("", *EXPECTATIONS):
        raise AblationError(f"arm {path}: paper.expect must be one of {', '.join(EXPECTATIONS)}")
    name = path.stem
    parent = doc.get("from")
    if parent is not None:
        if not isinstance(parent, str) or arm_path(parent).stem in (*_seen, name):
            raise AblationError(f"arm {path}: 'from' must name another arm, not one that starts from it")
        base = load_arm(parent, board, (*_seen, name)).settings
    else:
        base = demo_settings(board).to_dict()
    try:
        settings = RunSettings.from_dict(merged(base, changes)).to_dict()
    except SettingsError as e:
        raise AblationError(f"arm {path}: {e}") from None
    return Arm(name, doc["title"], doc["description"], settings, paper.get("claim", ""), paper.get("expect", ""))


@dataclass(frozen=True)
class Repetition:
    """The ``seed``-th run of an arm (from 1): from the random network, with a platform of its own."""

    arm: Arm
    seed: int = 1

    @property
    def name(self) -> str:
        """Its folder's name under ``DATA/arms`` and its networks' prefix in the rating: the arm's name
        for the first, ``NAME.seedK`` for the K-th."""
        return self.arm.name if self.seed == 1 else f"{self.arm.name}.seed{self.seed}"

    def folder(self, data: Path) -> Path:
        return data / "arms" / self.name


def repetitions(arms: list[Arm], seeds: int) -> list[Repetition]:
    """The ``seeds`` repetitions of every arm in the order they run: every arm's first, then every
    arm's second, and so on, so that an ablation stopped part way has whole rounds of arms."""
    return [Repetition(arm, seed) for seed in range(1, seeds + 1) for arm in arms]


def merged(base: dict, changes: dict) -> dict:
    """``base`` with ``changes`` merged in key by key (objects into objects, anything else replaced)."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


# --- an arm's state ------------------------------------------------------------------------------------
@dataclass
class ArmState:
    """What an arm has used: CPU seconds (the platform's, and its client's alone: ``selfplay_seconds``)
    and wall seconds over all its sittings, and samples [unix time, CPU seconds so far, 1-minute load
    average, self-play CPU seconds so far] taken while it ran."""

    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    finished: bool = False
    sittings: int = 0
    samples: list[list[float]] = field(default_factory=list)
    selfplay_seconds: float = 0.0
    # Under the self-play budget: whether the trainer trained the rows it had once the client's time
    # was up, and the wall seconds that took (the client paused).
    caught_up: bool = False
    catch_up_seconds: float = 0.0

    @classmethod
    def load(cls, path: Path) -> ArmState:
        if not path.exists():
            return cls()
        try:
            data = json.loads(path.read_text())
            return cls(**data)
        except (OSError, ValueError, TypeError) as e:
            raise AblationError(f"{path}: not an arm's state ({e}); delete the arm's folder to run it again") from None

    def save(self, path: Path) -> None:
        atomic_write(path, json.dumps(self.__dict__).encode())

    def used(self, budget: str) -> float:
        """The CPU seconds the budget ``budget`` (one of BUDGETS) counts."""
        return self.selfplay_seconds if budget == "selfplay" else self.cpu_seconds

    def done(self, budget: str, cpu_budget: float) -> bool:
        """Whether the arm used its budget (and, under the self-play one, its trainer caught up)."""
        return self.used(budget) >= cpu_budget and (budget != "selfplay" or self.caught_up)

    def cpu_at(self, when: float, budget: str = "platform") -> float:
        """CPU seconds the budget ``budget`` counts used by the unix time ``when`` (interpolated
        between samples)."""
        column = 3 if budget == "selfplay" else 1
        points = [(s[0], s[column] if len(s) > column else 0.0) for s in self.samples]
        if not points:
            return 0.0
        previous = points[0]
        if when <= previous[0]:
            return previous[1]
        for sample in points[1:]:
            if when <= sample[0]:
                if sample[0] - previous[0] > 4 * SAMPLE_SECONDS:  # a gap between sittings: the arm was stopped
                    return previous[1]
                share = (when - previous[0]) / (sample[0] - previous[0])
                return previous[1] + share * (sample[1] - previous[1])
            previous = sample
        return previous[1]

    def mean_load(self) -> float | None:
        loads = [s[2] for s in self.samples if len(s) > 2]
        return sum(loads) / len(loads) if loads else None


def is_client(argv: list[str]) -> bool:
    """Whether a command line is the platform's self-play client (``python -m client contribute``)."""
    return any(argv[k : k + 3] == ["-m", "client", "contribute"] for k in range(len(argv)))


class CpuMeter:
    """CPU seconds (user and system) of a process and all its descendants, each process counted with
    the last figure seen of it, so that processes that ended keep theirs; ``selfplay_seconds`` counts
    those of the client's tree alone (a child of the root that :func:`is_client`, and its descendants)."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.seen: dict[tuple[int, float], float] = {}
        self.client: set[tuple[int, float]] = set()

    def _sample(self) -> None:
        with contextlib.suppress(psutil.Error):
            clients: set[tuple[int, float]] = set()
            for child in self.root.children():
                with contextlib.suppress(psutil.Error):
                    if is_client(child.cmdline()):
                        clients.add((child.pid, child.create_time()))
                        for process in child.children(recursive=True):
                            with contextlib.suppress(psutil.Error):
                                clients.add((process.pid, process.create_time()))
            self.client |= clients
            for process in [self.root, *self.root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    times = process.cpu_times()
                    self.seen[(process.pid, process.create_time())] = times.user + times.system

    def seconds(self) -> float:
        """All the tree's CPU seconds (sampled now)."""
        self._sample()
        return sum(self.seen.values())

    def selfplay_seconds(self) -> float:
        """The client's tree's CPU seconds, as of the last :meth:`seconds`."""
        return sum(v for k, v in self.seen.items() if k in self.client)

    def signal_client(self, signum: int) -> None:
        """Send ``signum`` to every live process of the client's tree (SIGSTOP pauses it, SIGCONT
        resumes it)."""
        self._sample()
        for pid, created in self.client:
            with contextlib.suppress(psutil.Error):
                process = psutil.Process(pid)
                if process.create_time() == created:
                    process.send_signal(signum)


def trainer_idle(database: Path) -> bool:
    """Whether every training line of the arm's run (its embedded database, read-only) is idle: it
    has trained the rows it received. False while it trains, or when that cannot be read yet."""
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True, timeout=5.0)) as db:
            statuses = [
                row[0] for row in db.execute("SELECT status FROM training_trainingline WHERE role != 'retired'")
            ]
    except sqlite3.Error:
        return False
    return bool(statuses) and all(status == "idle" for status in statuses)


# --- running an arm ------------------------------------------------------------------------------------
def arm_env(data: Path) -> dict[str, str]:
    """The environment of an arm's processes: the embedded default in ``data``, nothing of the
    caller's database, storage or cache."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "STORAGE_URL", "CACHE_URL", "SENTE_DATA_DIR", "DJANGO_SETTINGS_MODULE")
    }
    env.update(SENTE_DATA_DIR=str(data), PYTHONUNBUFFERED="1")
    return env


def _manage(args: list[str], env: dict[str, str], log: Path) -> None:
    with open(log, "ab") as out:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=out, stderr=out)
    if done.returncode != 0:
        raise AblationError(f"manage.py {' '.join(args)} failed (status {done.returncode}): see {log}")


def warm_up(arm: Arm, folder: Path, log: Path) -> None:
    """Compile the kernels the platform's processes run (numba keeps them on disk): the server's
    (``manage.py warm_up``, in an arm's environment), then the search's, with a few self-play games
    and a match of a fresh network of the arm's, so that the first arm does not pay for compiling
    them (the server's alone took a 5x5 arm's first half CPU-minute)."""
    from common.architecture import named_config
    from common.nn.model import Model
    from common.nn.modelfile import save_model

    folder.mkdir(parents=True, exist_ok=True)
    _manage(["warm_up"], arm_env(folder / "data"), log)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        net = Path(tmp) / "warm-up.safetensors"
        save_model(Model(named_config(arm.architecture)).eval(), net, "warm-up")
        selfplay, match = Path(tmp) / "selfplay.json", Path(tmp) / "match.json"
        selfplay.write_text(json.dumps(arm.settings["selfplay"]))
        match.write_text(json.dumps(arm.settings["rating"]))
        common = ["--device", "cpu", "--no-compile"]
        for args in (
            [
                "selfplay",
                "--model",
                str(net),
                "--games",
                "4",
                "--parallel",
                "4",
                "--settings",
                str(selfplay),
                "--quiet",
            ],
            ["match", str(net), str(net), "--games", "2", "--parallel", "2", "--settings", str(match)],
        ):
            with open(log, "ab") as out:
                command = [sys.executable, "-m", "client", *args, "--out", str(Path(tmp) / args[0]), *common]
                done = subprocess.run(command, cwd=ROOT, stdout=out, stderr=out)
            if done.returncode != 0:
                raise AblationError(f"the warm-up's {args[0]} failed (status {done.returncode}): see {log}")


def run_arm(
    run: Repetition,
    data: Path,
    cpu_budget: float,
    port: int,
    parallel: int,
    progress: Callable[[str], None],
    stopping: Callable[[], bool],
    budget: str = "platform",
) -> ArmState:
    """Run the platform on the repetition ``run`` in its folder under the ablation's ``data`` until its
    processes used ``cpu_budget`` CPU seconds over all sittings, those that ``budget`` (one of BUDGETS)
    counts (or ``stopping()`` says so), then list its generations. Returns its state."""
    arm, name, folder = run.arm, run.name, run.folder(data)
    folder.mkdir(parents=True, exist_ok=True)
    settings_file = folder / "settings.json"
    if settings_file.exists() and json.loads(settings_file.read_text()) != arm.settings:
        raise AblationError(
            f"arm {name}: its settings changed since it started ({settings_file}); delete {folder} to "
            "run it again from the start"
        )
    atomic_write(settings_file, json.dumps(arm.settings, indent=1).encode())
    state_path = folder / "state.json"
    state = ArmState.load(state_path)
    if state.finished or state.done(budget, cpu_budget):
        state.finished = True
        return state
    env = arm_env(folder / "data")
    supervisor = Supervisor(folder, env)
    platform = supervisor.start(
        "platform",
        [
            sys.executable,
            "manage.py",
            "platform",
            "--port",
            str(port),
            "--parallel",
            str(parallel),
            "--settings-file",
            str(settings_file),
            "--status-seconds",
            "60",
            "--device",
            "cpu",
        ],
        stop_signal=signal.SIGINT,
    )
    state.sittings += 1
    meter = CpuMeter(platform.process.pid)
    cpu_before, selfplay_before = state.cpu_seconds, state.selfplay_seconds
    wall_before, started = state.wall_seconds, time.time()
    last_note = 0.0

    def measure() -> None:
        now = time.time()
        state.cpu_seconds = cpu_before + meter.seconds()
        state.selfplay_seconds = selfplay_before + meter.selfplay_seconds()
        state.wall_seconds = wall_before + now - started
        state.samples.append([now, state.cpu_seconds, load_average() or 0.0, state.selfplay_seconds])
        state.save(state_path)

    paused = False
    try:
        while platform.running() and state.used(budget) < cpu_budget and not stopping():
            if time.time() - last_note >= 60:
                last_note = time.time()
                progress(
                    f"arm {name}: {state.used(budget) / 60:.1f} of {cpu_budget / 60:g} CPU-minutes "
                    f"of {budget} ({state.cpu_seconds / 60:.1f} of the platform's; "
                    f"{state.wall_seconds / 60:.1f} minutes)"
                )
            time.sleep(SAMPLE_SECONDS)
            measure()
        if budget == "selfplay" and state.used(budget) >= cpu_budget and platform.running() and not stopping():
            # The client's time is up: it pauses while the trainer trains the rows it has, so that
            # training is not what limits the arm.
            progress(
                f"arm {name}: self-play paused at {state.used(budget) / 60:.1f} CPU-minutes; the trainer catches up"
            )
            meter.signal_client(signal.SIGSTOP)
            paused, began, idle = True, time.time(), 0
            database = folder / "data" / "sente.sqlite3"
            while platform.running() and not stopping() and time.time() - began < CATCH_UP_SECONDS:
                time.sleep(SAMPLE_SECONDS)
                measure()
                idle = idle + 1 if trainer_idle(database) else 0
                if idle >= IDLE_READINGS:
                    state.caught_up = True
                    break
            state.catch_up_seconds += time.time() - began
            if not state.caught_up and time.time() - began >= CATCH_UP_SECONDS:
                state.caught_up = True  # as far as it got: the report's samples say how far
                progress(f"arm {name}: the trainer did not catch up in {CATCH_UP_SECONDS / 60:g} minutes")
    finally:
        if paused:
            meter.signal_client(signal.SIGCONT)
        if platform.running():
            progress(f"arm {name}: {state.used(budget) / 60:.1f} CPU-minutes of {budget} used; stopping its platform")
            supervisor.stop(platform, STOP_SECONDS)
        measure()
    if platform.process.returncode != 0:
        raise AblationError(
            f"arm {name}: its platform ended with status {platform.process.returncode}; the end of "
            f"{platform.log_path}:\n{platform.log_tail()}"
        )
    state.finished = state.done(budget, cpu_budget)
    state.save(state_path)
    list_generations(folder)
    return state


def list_generations(folder: Path) -> None:
    """``manage.py generations`` of the arm in ``folder`` (in its environment), into ``generations/``."""
    _manage(["generations", "--out", str(folder / "generations")], arm_env(folder / "data"), folder / "generations.log")


def read_generations(folder: Path) -> dict:
    """What ``manage.py generations`` wrote of an arm (its folder)."""
    path = folder / "generations" / "generations.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise AblationError(f"{path}: {e}; run the ablation again to list the arm's generations") from None
