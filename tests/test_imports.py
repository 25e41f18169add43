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
