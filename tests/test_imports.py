"""The layout's import rules: within each of common, client and server the modules import each other
without cycles, counting imports inside functions too (a cycle dodged by an import in a function
still ties the modules together), and client and server never import each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: str = "server") -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports, at any level."""
    paths = {_module(p): p for p in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    imported.add(full if full in paths else node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
        graph[name] = {m for m in imported if m in paths and m != name}
    return graph


def cycle_from(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A path of imports from start back to start, if there is one."""
    stack, seen = [(start, [start])], set()
    while stack:
        module, path = stack.pop()
        for dep in sorted(graph[module]):
            if dep == start:
                return [*path, start]
            if dep not in seen:
                seen.add(dep)
                stack.append((dep, [*path, dep]))
    return None


def test_cycle_from_finds_a_cycle_and_only_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycle_from(graph, "a") == ["a", "b", "c", "a"]
    assert cycle_from(graph, "d") is None


def test_the_graph_sees_imports_at_the_top_and_in_functions() -> None:
    graph = import_graph("server")
    assert "server.dashboard.tallies" in graph["server.dashboard.views"]
    assert "server.audit.evaluate" in graph["server.audit.services"]  # imported inside a function


@pytest.mark.parametrize("package", ["common", "client", "server"])
def test_no_import_cycles(package: str) -> None:
    graph = import_graph(package)
    cycles = [cycle for cycle in (cycle_from(graph, m) for m in sorted(graph)) if cycle]
    assert not cycles, " ; ".join(" -> ".join(c) for c in cycles)


def _imported_packages(package: str) -> dict[str, set[str]]:
    """Each module of the package and the top-level packages it imports."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        tops: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                tops.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                tops.update(alias.name.split(".")[0] for alias in node.names)
        found[_module(path)] = tops
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("common", {"client", "server", "django", "rest_framework", "requests"}),
        ("client", {"server", "django"}),
        ("server", {"client"}),
    ],
)
def test_packages_keep_to_their_side(package: str, forbidden: set[str]) -> None:
    crossing = {m: sorted(t & forbidden) for m, t in _imported_packages(package).items() if t & forbidden}
    assert not crossing, crossing


def part_graph(package: str) -> dict[str, set[str]]:
    """Each part of the package (its subpackage or top-level module) and the other parts it imports."""
    graph: dict[str, set[str]] = {}
    for module, deps in import_graph(package).items():
        part = ".".join(module.split(".")[:2])
        graph.setdefault(part, set()).update(".".join(d.split(".")[:2]) for d in deps)
    return {part: deps - {part} for part, deps in graph.items()}


def test_the_parts_of_common_import_one_way() -> None:
    """The encoding of positions, the settings and the rows stand below the network (common.nn),
    which alone imports torch: none of them imports it back."""
    graph = part_graph("common")
    assert "common.encoding" in graph["common.data"] and "common.data" in graph["common.nn"]
    cycles = [cycle for cycle in (cycle_from(graph, p) for p in sorted(graph)) if cycle]
    assert not cycles, " ; ".join(" -> ".join(c) for c in cycles)


def test_the_search_and_the_commands_that_play_without_a_network_load_no_torch() -> None:
    """The search reads numpy arrays (common.encoding.readout), so the GTP engine's random player,
    twogtp, matches and self-play of the random network start without loading torch (a second of
    processor time at each start), and so does every command's parser."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import client.__main__, client.gtp.engine, client.gtp.twogtp, client.match.run, client.selfplay.run\n"
        "client.__main__.build_parser()"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_web_server_and_its_database_worker_load_no_torch() -> None:
    """A web process serves pages and the API with Django alone: it checks a canary's fingerprint
    (common.canary) but never evaluates a network, which the database worker's tasks do after
    loading torch themselves. Each gunicorn master and each management command that is not a
    trainer so starts without torch (a second and a half of processor time)."""
    import os
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import django; django.setup()\n"
        "import server.urls, server.wsgi, server.networks.tasks\n"
        "from django.core.management import call_command; call_command('check')"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "server.settings"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


# The server from the bottom up (docs/architecture.md draws it). Each level holds parts: an app, or
# the modules of an app that stand below the rest of it (the rows of the audit's verdicts and of the
# task ledger, the network's row, the run's API that shows what the levels below it made). A module
# belongs to the part of the longest name it starts with, and imports only the tools and the parts
# of its own level or below, inside functions too.
SERVER_TOOLS = (
    "server.api",  # the API's shared HTTP tools: errors, throttles, limits, filters
    "server.refusals",  # the domain's refusals, which the API's exception handler answers
    "server.files",
    "server.downloads",
    "server.paging",
    "server.outbound",
    "server.sql",
    "server.settings",
)
SERVER_LADDER = (
    ("server.accounts",),
    ("server.audit.models", "server.audit.selectors"),
    ("server.networks.models",),
    ("server.runs",),
    ("server.networks",),
    ("server.distribution.models",),
    ("server.games",),
    ("server.ratings",),
    ("server.training",),
    ("server.runs.api",),
    ("server.audit",),
    ("server.notices",),
    ("server.distribution",),
    ("server.dashboard",),
    ("server.operations",),
    ("server.platform",),
)
SERVER_TOP = ("server", "server.urls", "server.wsgi")  # the URL table and the entry points import anything


def _part(module: str, parts: tuple[str, ...]) -> str | None:
    """The longest of ``parts`` that ``module`` is or lies in."""
    found = [p for p in parts if module == p or module.startswith(p + ".")]
    return max(found, key=len) if found else None


def upward_imports(graph: dict[str, set[str]], ladder=SERVER_LADDER, tools=SERVER_TOOLS, top=SERVER_TOP) -> list[str]:
    """Each import that goes up: a tool importing a part of the ladder or the top, a part importing a
    higher level's part or the top; and each module that belongs nowhere."""
    level = {part: i for i, parts in enumerate(ladder) for part in parts}
    every = (*level, *tools)
    found = []
    for module in sorted(graph):
        own = _part(module, every)
        if own is None:
            if module not in top:
                found.append(f"{module} is on no level of the ladder and is not a tool")
            continue
        for dep in sorted(graph[module]):
            theirs = _part(dep, every)
            if theirs is None or theirs == own:
                goes_up = theirs is None  # the top
            elif own in tools:
                goes_up = theirs not in tools
            else:
                goes_up = theirs in level and level[theirs] > level[own]
            if goes_up:
                found.append(f"{module} ({own}) imports {dep} ({theirs or 'the top'})")
    return found


def test_upward_imports_are_found() -> None:
    ladder = (("low.models",), ("low",), ("high",))  # the rows of low below the rest of it
    graph = {
        "low.a": {"low.models.m", "tool"},
        "low.models.m": {"high.x"},  # up
        "high.x": {"low.a", "low.models.m", "tool"},
        "tool": {"low.a"},  # a tool importing an app
        "stray": set(),  # on no level
        "top": {"high.x"},
        "high.y": {"top"},  # the top is above everything
    }
    assert upward_imports(graph, ladder, ("tool",), ("top",)) == [
        "high.y (high) imports top (the top)",
        "low.models.m (low.models) imports high.x (high)",
        "stray is on no level of the ladder and is not a tool",
        "tool (tool) imports low.a (low)",
    ]


def test_the_server_is_a_ladder() -> None:
    """The server's apps import one way, down the ladder: no import from a lower part to a higher one,
    not even inside a function (a lower app that needs to tell a higher one something sends a signal
    the higher one connects to)."""
    assert not (found := upward_imports(import_graph("server"))), "\n".join(found)


def orm_reads(source: str) -> list[int]:
    """The lines of a module that query the database themselves: a model's manager (``X.objects``)
    or ``get_object_or_404``."""

    def queries(node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr == "objects"
        return isinstance(node, ast.Name) and node.id in ("get_object_or_404", "get_list_or_404")

    return sorted(node.lineno for node in ast.walk(ast.parse(source)) if queries(node))


def test_orm_reads_are_found() -> None:
    source = "def page(request):\n    a = get_object_or_404(Run, pk=1)\n    return Network.objects.filter(run=a)\n"
    assert orm_reads(source) == [2, 3]
    assert orm_reads("def page(request):\n    return selectors.networks_shown(run, show)\n") == []


def test_pages_read_through_selectors() -> None:
    """The website's views parse the request, call the selectors and render: they query nothing."""
    pages = sorted((ROOT / "server").glob("*/views.py"))
    assert {p.parent.name for p in pages} >= {"accounts", "dashboard", "operations"}
    found = {str(p.relative_to(ROOT)): orm_reads(p.read_text()) for p in pages}
    assert not {path: lines for path, lines in found.items() if lines}, found
