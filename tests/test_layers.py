"""The package's layers: no import cycle, and no import that runs upward.

Every module under ``reuse/`` is parsed with :mod:`ast` (nothing is imported), and every import
in it counts: at the top, inside functions, under ``TYPE_CHECKING``, relative ones
(``from . import x``, ``from ..core import dataflow``). An import names the most specific module
it reaches (``from reuse.cli import billing`` is ``reuse.cli.billing``; ``from reuse.core.dataflow
import Dataflow`` is ``reuse.core.dataflow``).

:data:`LAYERS` is the order, bottom first. A module belongs to the room of the longest name in
it that prefixes the module's name (a name in :data:`EXACT` only holds that one module: the
package itself). A module may import from its own room and from rooms of lower layers; rooms of
the same layer are independent (neither imports the other). :data:`INSIDE` orders the rooms
inside a room the same way. A module in no room fails the test: a new top-level module or
runtime module must be given its place here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "reuse"

#: Rooms of the package, bottom layer first; rooms in one tuple are side by side.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("reuse.core",),
    ("reuse.tasks",),
    ("reuse.workloads",),
    ("reuse.analysis",),
    ("reuse.runtime", "reuse.placement"),
    ("reuse.figures", "reuse.viz"),
    ("reuse.live",),  # the live engine and its view: runtime below, viz beside
    ("reuse.cli", "reuse.testing"),
    ("reuse", "reuse.__main__"),
)

#: The order inside a room, bottom first (a room not named here has no inner order).
INSIDE: dict[str, tuple[tuple[str, ...], ...]] = {
    "reuse.runtime": (
        ("reuse.runtime",),  # the package: SparkRuntimeError
        ("reuse.runtime.common",),  # policy, planners, execution, files, states
        # bus, frames, flow control, retention, data sources; beside it, the control plane
        # of k-safety across applications (operation journal, instances, output logs)
        ("reuse.runtime.dataplane", "reuse.runtime.control"),
        # the refused combinations, which the spec checks; a run's per-step row
        ("reuse.runtime.refusals", "reuse.runtime.rows"),
        # what a run is configured with (issue 32), and what every engine offers its driver
        ("reuse.runtime.spec", "reuse.runtime.engines.contract"),
        ("reuse.runtime.engines.partial", "reuse.runtime.engines.shared"),
        ("reuse.runtime.engines", "reuse.runtime.engines.conformance"),
        # a run, over either engine
        ("reuse.runtime.accounting", "reuse.runtime.cluster", "reuse.runtime.floor",
         "reuse.runtime.journal", "reuse.runtime.measure", "reuse.runtime.progress",
         "reuse.runtime.session", "reuse.runtime.spread"),
        ("reuse.runtime.apps",),  # K+1 engine instances and their coordinator (issue 24)
        ("reuse.runtime.run",),
    ),
    "reuse.cli": (
        ("reuse.cli.common",),
        ("reuse.cli.billing", "reuse.cli.blast", "reuse.cli.broker", "reuse.cli.lab",
         "reuse.cli.placement",
         "reuse.cli.runtime", "reuse.cli.workloads"),
        ("reuse.cli.main",),
        ("reuse.cli",),
    ),
}

#: Rooms that hold only the module of that name (a package's ``__init__``), not its submodules
#: (inside a room's order, the room's own name is such a room too).
EXACT = frozenset({"reuse", "reuse.runtime.engines"})

# --- the import graph -----------------------------------------------------------------------


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package) of every module under ``root`` (a package folder)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(parts)] = (path, is_pkg)
    return out


def _target(name: str, known: Mapping[str, object]) -> str | None:
    """The longest prefix of ``name`` that is a known module (``None``: not in the package)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        head = ".".join(parts[:i])
        if head in known:
            return head
    return None


def imports(module: str, is_pkg: bool, tree: ast.AST, known: Mapping[str, object]) -> set[str]:
    """The package's modules ``module`` imports anywhere in its source."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package holding the module
                base = module.split(".") if is_pkg else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            names = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem
                     for a in node.names]
        else:
            continue
        for name in names:
            target = _target(name, known)
            if target is not None and target != module:
                out.add(target)
    return out


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports."""
    known = modules(root)
    return {m: imports(m, is_pkg, ast.parse(path.read_text(encoding="utf-8"), str(path)), known)
            for m, (path, is_pkg) in known.items()}


# --- the checks -----------------------------------------------------------------------------


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) per strongly connected component that has one (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_cycle_in(v, component, graph))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def _cycle_in(start: str, component: set[str], graph: Mapping[str, Iterable[str]]) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``component`` (breadth first)."""
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return [start, *reversed(path[:-1]), start] if v != start else [start, start]
                if w in component and w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")  # pragma: no cover - Tarjan found one


def room(module: str, layers: Sequence[Sequence[str]],
         exact: frozenset[str] = EXACT) -> tuple[int, str] | None:
    """``(layer, room)`` of a module among ``layers`` (``None``: in none of them)."""
    best: tuple[int, str] | None = None
    for rank, names in enumerate(layers):
        for name in names:
            fits = module == name or (name not in exact and module.startswith(name + "."))
            if fits and (best is None or len(name) > len(best[1])):
                best = (rank, name)
    return best


def placed(module: str, layers: Sequence[Sequence[str]] = LAYERS,
           inside: Mapping[str, Sequence[Sequence[str]]] = INSIDE,
           exact: frozenset[str] = EXACT) -> tuple[list[tuple[int, str]], str | None]:
    """The rooms a module is in, outermost first, and the room whose inner order leaves it out
    (``([], None)``: in no room of ``layers``). Inside a room's order, the room's own name holds
    only the package itself."""
    path: list[tuple[int, str]] = []
    while (where := room(module, layers, exact)) is not None:
        path.append(where)
        if where[1] not in inside:
            return path, None
        layers, exact = inside[where[1]], exact | {where[1]}
        inside = {k: v for k, v in inside.items() if k != where[1]}
    return path, (path[-1][1] if path else None)


def upward(graph: Mapping[str, Iterable[str]], layers: Sequence[Sequence[str]] = LAYERS,
           inside: Mapping[str, Sequence[Sequence[str]]] = INSIDE,
           exact: frozenset[str] = EXACT) -> list[str]:
    """Every module in no room and every import that runs upward or sideways, as messages."""
    problems = []
    rooms = {}
    for module in sorted(graph):
        rooms[module], left_out = placed(module, layers, inside, exact)
        if not rooms[module]:
            problems.append(f"{module} is in no layer: give it a room in LAYERS")
        elif left_out is not None:
            problems.append(f"{module} is in no layer of {left_out}: give it a room in INSIDE")
    for module in sorted(graph):
        for target in sorted(graph[module]):
            for a, b in zip(rooms[module], rooms.get(target, []), strict=False):
                if a[1] != b[1]:  # the level where they part
                    if b[0] >= a[0]:
                        how = "up" if b[0] > a[0] else "sideways"
                        problems.append(f"{module} ({a[1]}) imports {target} ({b[1]}): {how}, "
                                        "against the layer order")
                    break
    return problems


# --- the tests ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_import_runs_upward(graph: dict[str, set[str]]) -> None:
    problems = upward(graph)
    assert not problems, "layer order broken:\n" + "\n".join(problems)


def test_every_room_exists(graph: dict[str, set[str]]) -> None:
    """A room renamed or removed must leave LAYERS and INSIDE too."""
    names = [n for layer in LAYERS for n in layer]
    names += [n for sub in INSIDE.values() for layer in sub for n in layer]
    assert [n for n in names if n not in graph] == []


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """The graph and both checks on a tiny package with a cycle and an upward import, relative
    and in-function imports included."""
    pkg = tmp_path / "reuse"
    (pkg / "core").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("from . import b\n")
    (pkg / "core" / "b.py").write_text("def f():\n    from reuse.core import a\n")
    (pkg / "core" / "c.py").write_text("from ..cli import main\n")
    (pkg / "cli").mkdir()
    (pkg / "cli" / "__init__.py").write_text("")
    (pkg / "cli" / "main.py").write_text("import reuse.core.c\n")
    g = import_graph(pkg)
    assert g["reuse.core.a"] == {"reuse.core.b"} and g["reuse.core.b"] == {"reuse.core.a"}
    assert sorted(map(tuple, cycles(g))) == [("reuse.cli.main", "reuse.core.c", "reuse.cli.main"),
                                             ("reuse.core.a", "reuse.core.b", "reuse.core.a")]
    layers = (("reuse.core",), ("reuse.cli",), ("reuse",))
    exact = frozenset({"reuse"})
    assert upward(g, layers, {}, exact) == [
        "reuse.core.c (reuse.core) imports reuse.cli.main (reuse.cli): up, against the layer "
        "order"]
    assert upward(g, (("reuse.core",), ("reuse",)), {}, exact) == [
        "reuse.cli is in no layer: give it a room in LAYERS",
        "reuse.cli.main is in no layer: give it a room in LAYERS"]
