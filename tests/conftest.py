import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tests.warmup import COMPILING, marker

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SENTE_SHARED", ROOT.parent / "shared"))

settings.register_profile("default", deadline=None)
settings.load_profile("default")

_warmup: list[subprocess.Popen] = []


def pytest_sessionstart(session):
    """Compile numba's kernels in another process (``tests/warmup.py``) while the first tests run: on
    a clean checkout numba's cache is empty and compiling takes minutes of one core, while the first
    tests (the server's that need no kernels) run on the other. With the cache filled it takes
    seconds. SENTE_NO_WARMUP=1 turns it off."""
    import numba
    import torch

    # torch on one thread in the test process: beside the warm-up's compilers and the servers and
    # clients the tests start, a second thread spends its time waiting for a core (a trainer test
    # took ten times longer with two on this 2-core machine).
    torch.set_num_threads(1)
    # The search's parallel passes too: their second thread waits at each pass's barrier for a core
    # the other test process or the network holds (docs/testing.md has the figures).
    numba.set_num_threads(1)
    if os.environ.get("SENTE_NO_WARMUP"):
        return
    _wait_for_the_warmup_on_a_cache_miss()
    if hasattr(session.config, "workerinput"):  # a test process of pytest-xdist: its controller warms up
        return
    # The warm-up and the test processes pytest-xdist starts next inherit these: the file that appears
    # when the warm-up ends, and the folder of the markers of what it is compiling.
    folder = Path(tempfile.mkdtemp(prefix="sente-warmup-"))
    (folder / "compiling").mkdir()
    os.environ[WARMUP_DONE] = str(folder / "done")
    os.environ[COMPILING] = str(folder / "compiling")
    _warmup.append(
        subprocess.Popen(
            [sys.executable, "-m", "tests.warmup"],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    threading.Thread(target=_mark_the_warmup_done, args=(folder / "done",), daemon=True).start()


WARMUP_DONE = "SENTE_WARMUP_DONE"


def _mark_the_warmup_done(done: Path) -> None:
    for process in _warmup:
        process.wait()
    with contextlib.suppress(FileNotFoundError):  # the session ended first and took the folder away
        done.touch()


def _warmup_running() -> bool:
    """Whether the warm-up still compiles: this process's own, or (in a test process of
    pytest-xdist) the one its controller started, until the file it names appears."""
    if _warmup:
        return any(process.poll() is None for process in _warmup)
    done = os.environ.get(WARMUP_DONE)
    return bool(done) and not Path(done).exists()


def _warmup_compiling(py_func) -> bool:
    """Whether the warm-up is compiling the kernel whose Python function this is (its marker)."""
    folder = os.environ.get(COMPILING)
    return bool(folder) and marker(Path(folder), py_func).exists() and _warmup_running()


def _wait_for_the_warmup_on_a_cache_miss() -> None:
    """A kernel the test process needs and numba's cache does not hold yet: while the warm-up is
    compiling that very kernel, look in the cache again every fifth of a second until the warm-up has
    saved it, rather than compile it a second time beside it; a kernel the warm-up is not compiling
    the test process compiles itself, rather than wait with its core idle for the whole warm-up to
    end (the first Go tests so waited 70 s and 31 s)."""
    from numba.core import caching

    load = caching.Cache.load_overload

    def load_or_wait(self, sig, target_context):
        while True:
            compiling = _warmup_compiling(self._py_func)  # before the look: a compile ending between is seen
            found = load(self, sig, target_context)
            if found is not None or not compiling:
                return found
            time.sleep(0.2)

    caching.Cache.load_overload = load_or_wait


def pytest_sessionfinish(session, exitstatus):
    for process in _warmup:
        if process.poll() is None:
            process.kill()
        process.wait()
    if _warmup and os.environ.get(WARMUP_DONE):  # the controller's: its folder for the done-file
        shutil.rmtree(Path(os.environ[WARMUP_DONE]).parent, ignore_errors=True)


def wait_for_warmup() -> None:
    """Let the compiling processes finish before a test compiles the same kernels beside them (they
    would compile them twice, sharing the cores); afterwards they load from the cache."""
    deadline = time.monotonic() + 900
    while _warmup_running() and time.monotonic() < deadline:
        time.sleep(0.5)


def _needs_kernels(item: pytest.Item) -> bool:
    """Whether the test runs the kernels the warm-up compiles: the end-to-end tests, those marked
    ``kernels`` (they play games, or evaluate a network), and those given played games (the session's,
    or the trainer tests')."""
    return (
        item.get_closest_marker("slow") is not None
        or item.get_closest_marker("kernels") is not None
        or bool({"selfplay_games", "training_games"} & set(getattr(item, "fixturenames", ())))
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The order of the tests. pytest-django puts the plain database tests before the transactional
    ones (a transactional test empties the tables, which a plain one after it would miss) and the
    rest last; between those two kinds that order is kept. The tests that need no compiled kernel
    come first, so that the warm-up compiles while they run: the plain database tests without
    kernels, those without a database, then the plain database tests with kernels, the
    transactional ones without and with kernels, and last the rest with kernels. (`make test` runs
    pytest-xdist's worksteal: one test process starts at the front of this order, the other half way,
    where it waits for the warm-up while the compiling processes and the first test process keep both
    cores busy; each runs its tests in this order, and takes the other's last ones when it runs out.)"""
    from pytest_django.plugin import validate_django_db

    def group(item: pytest.Item) -> int:  # as pytest-django orders
        marker = item.get_closest_marker("django_db")
        fixtures = getattr(item, "fixturenames", ())
        transactional = bool(marker and any(validate_django_db(marker)[:2]))
        if transactional and not validate_django_db(marker)[3]:  # (transaction, ..., serialized_rollback, ...)
            # Its flush at the end makes the content types again, which the next test that reloads
            # the serialized database then inserts a second time: every later one of them fails.
            raise pytest.UsageError(
                f"{item.nodeid}: a transactional test needs serialized_rollback=True, as the others have"
            )
        transactional = transactional or "transactional_db" in fixtures or "live_server" in fixtures
        if transactional:
            return 1
        return 0 if marker or "db" in fixtures else 2

    def rank(item: pytest.Item) -> float:
        g, kernels = group(item), _needs_kernels(item)
        if g == 1:  # transactional: after every plain database test
            return 4 if kernels else 3
        if not kernels:  # among those without a database, the ones that use no kernel at all first
            return 0 if g == 0 else 1.5 if _uses_kernels(item) else 1
        return 2 if g == 0 else 5

    items.sort(key=rank)


# What a test module imports that runs numba kernels (the rules, the features, the rows, the search).
KERNEL_MODULES = (
    "common.go",
    "common.data",
    "common.encoding.features",
    "common.canary",
    "common.nn.canary",
    "client.",
)


@functools.cache
def _module_uses_kernels(path: Path) -> bool:
    return any(name in path.read_text(encoding="utf-8") for name in KERNEL_MODULES)


def _uses_kernels(item: pytest.Item) -> bool:
    """Whether the test's module imports code that runs kernels, as far as its text tells."""
    return _module_uses_kernels(Path(item.path))


@pytest.fixture(autouse=True)
def _compiled_kernels(request):
    if _needs_kernels(request.node):
        wait_for_warmup()


@pytest.fixture(autouse=True, scope="session")
def _fp32_on_every_cpu():
    """Tests hold the network's outputs against fp32 references (KataGo's among them) within fp32's
    tolerances, and ``--precision auto`` would run bf16 on a processor with bf16 instructions: in
    the tests' own process the CPU is taken to have none. Tests of bf16 ask for it by name, or set
    the flags themselves."""
    from common.nn import precision

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(precision, "cpu_features", lambda: frozenset())
        yield


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared folder with KataGo's golden outputs and models (beside the checkout)."""
    if not SHARED.is_dir():
        pytest.fail(f"shared data folder {SHARED} not found; set SENTE_SHARED to its path")
    return SHARED


# --- the server's test environment ------------------------------------------------------------------
_DB_NOTE: list[str] = []


def _postgres_url() -> str | None:
    """DATABASE_URL if set; else the local PostgreSQL (127.0.0.1:5432, user postgres) if it answers."""
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"]
    url = "postgres://postgres@127.0.0.1:5432/sente"
    try:
        import psycopg

        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", connect_timeout=3):
            return url
    except Exception as e:  # no server, no psycopg, refused: the tests say so and use SQLite
        _DB_NOTE.append(
            f"PostgreSQL at 127.0.0.1:5432 is not reachable ({type(e).__name__}); server tests use SQLite instead"
        )
        return None


def _configure_django() -> None:
    """Point Django at a throwaway data folder and at PostgreSQL when one is reachable (SQLite
    otherwise, and the report header says so); pytest-django then makes the test database. This runs
    when the test session imports this file, before any test module imports Django code."""
    import tempfile

    import django

    data = Path(tempfile.mkdtemp(prefix="sente-test-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    os.environ["SENTE_DATA_DIR"] = str(data)
    os.environ.pop("STORAGE_URL", None)
    os.environ.pop("CACHE_URL", None)
    os.environ["SENTE_RUN_STATE_SECONDS"] = "0"  # tests change the run and look at once
    url = _postgres_url()
    os.environ["DATABASE_URL"] = url or f"sqlite:///{data / 'sente.sqlite3'}"
    django.setup()


_configure_django()


def pytest_report_header(config):
    engine = os.environ.get("DATABASE_URL", "").split(":", 1)[0]
    return [f"server tests database: {engine}", *_DB_NOTE]
