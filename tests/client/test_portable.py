"""The client runs on Windows too: nothing on its path (the client and common packages) imports a
POSIX-only module or names a POSIX-only signal unguarded. What cannot run here is checked by
reading the code."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POSIX_MODULES = {"fcntl", "termios", "tty", "pwd", "grp", "resource", "posix", "pty"}
POSIX_OS = {"fork", "killpg", "setsid", "getuid", "geteuid", "getpgid", "getpgrp", "uname", "getloadavg"}
POSIX_SIGNALS = {"SIGUSR1", "SIGUSR2", "SIGHUP", "SIGQUIT", "SIGKILL", "SIGALRM", "SIGCHLD", "SIGPIPE", "SIGCONT"}


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside a try whose handlers catch ImportError (or all exceptions)."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                names = [handler.type] if not isinstance(handler.type, ast.Tuple) else handler.type.elts
                if handler.type is None or any(
                    isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError", "Exception")
                    for n in names
                ):
                    return True
    return False


def problems(source: str, name: str) -> list[str]:
    tree = ast.parse(source, name)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module.split(".")[0]]
        for module in modules:
            if module in POSIX_MODULES and not _guarded(node, parents):
                found.append(f"{name}:{node.lineno}: imports {module} unguarded")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            banned = {"signal": POSIX_SIGNALS, "os": POSIX_OS}.get(node.value.id, set())
            if node.attr in banned:
                found.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr} does not exist on Windows")
    return found


def test_the_clients_path_has_no_posix_only_calls():
    found = []
    for package in ("client", "common"):
        for path in sorted((ROOT / package).rglob("*.py")):
            found += problems(path.read_text(), str(path.relative_to(ROOT)))
    assert found == []


def test_the_check_finds_what_it_looks_for():
    code = "import fcntl\nimport signal\ntry:\n    import termios\nexcept ImportError:\n    termios = None\n"
    code += "signal.signal(signal.SIGUSR1, print)\nhasattr(signal, 'SIGUSR2')\nos.killpg(1, 2)\n"
    assert problems(code, "x.py") == [
        "x.py:1: imports fcntl unguarded",
        "x.py:7: signal.SIGUSR1 does not exist on Windows",
        "x.py:9: os.killpg does not exist on Windows",
    ]


def test_the_volunteers_client_stops_when_its_terminal_closes_but_not_under_nohup():
    import os
    import signal
    import time

    from client.contribute.console import take_signals

    names = ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2")
    before = {name: signal.getsignal(getattr(signal, name)) for name in names}
    done: list[str] = []

    def interrupt() -> None:
        done.append("interrupt")

    def pause(on: bool) -> None:
        done.append(f"pause {on}")

    try:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)  # as a terminal leaves it (this test may run under nohup)
        actions = take_signals(interrupt, pause)
        assert actions is not None
        os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while len(done) < 2 and time.monotonic() < deadline:  # the actions run in their own thread
            time.sleep(0.01)
        assert done == ["interrupt", "pause True"]
        actions.close()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL  # put back at the end
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup leaves it
        actions = take_signals(interrupt, pause)
        assert actions is not None
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        actions.close()
    finally:
        for name, handler in before.items():
            signal.signal(getattr(signal, name), handler)
