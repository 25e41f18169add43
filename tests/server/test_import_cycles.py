"""The server's modules import each other without cycles, counting imports inside functions too: a
cycle dodged by an import in a function still ties the modules together."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


def test_no_import_cycles_in_the_server() -> None:
    graph = import_graph()
    assert "server.dashboard.views" in graph and "server.dashboard.tallies" in graph["server.dashboard.views"]
    cycles = [cycle for cycle in (cycle_from(graph, m) for m in sorted(graph)) if cycle]
    assert not cycles, " ; ".join(" -> ".join(c) for c in cycles)
