"""The structure drawn from the code's own imports: arrows point one way.

Every ``import`` of an exactplace module in ``exactplace/`` and ``formulations/`` (module level
or inside a function: a lazy import is still an arrow) is an edge. The layers, lowest first,
are docs/layout.md's; a module may import its own layer and the layers below, never above; no
two modules import each other, however indirectly; and no module imports another's private
(``_``) name. The one private import allowed is the compiled extension ``exactplace._native``,
by its one binding module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]

#: Lowest first: a module's layer is its subpackage (``exactplace.<layer>...``).
LAYERS = ("core", "data", "evaluators", "formulations", "methods", "backends", "heuristics", "runtime",
          "frontends", "export", "plot", "regress", "paper", "cli")
EXTENSION = ("exactplace.backends.native", "exactplace._native")
#: The one arrow allowed upwards: ``Placement.plot()`` draws with the plot layer, imported when called
#: (as ``pandas.DataFrame.plot`` loads its plotting backend); nothing else below ``plot`` may reach it.
PLOT_CONVENIENCE = ("exactplace.core.placement", "exactplace.plot")


def modules() -> dict[str, Path]:
    found = {}
    for path in [*(ROOT / "exactplace").rglob("*.py"), *(ROOT / "formulations").glob("*.py")]:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[0] == "formulations":  # installed as exactplace.formulations
            parts = ["exactplace", *parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports() -> tuple[nx.DiGraph, list[tuple[str, str]]]:
    """The import graph between exactplace modules, and the private names imported across modules."""
    known = modules()
    graph, private = nx.DiGraph(), []
    graph.add_nodes_from(known)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                source = ".".join([*base, *([node.module] if node.module else [])])
                targets = [(source, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [(alias.name, None) for alias in node.names]
            else:
                continue
            for source, imported in targets:
                if not source.startswith("exactplace"):
                    continue
                full = f"{source}.{imported}" if imported else source
                target = full if full in known else source
                if target in known and target != name:
                    graph.add_edge(name, target)
                if imported and imported.startswith("_") and not imported.startswith("__") and target != name:
                    private.append((name, full))
    return graph, private


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_no_import_circle() -> None:
    graph, _ = imports()
    graph.remove_edge(*PLOT_CONVENIENCE)  # the one circle allowed: Placement.plot() -> plot -> Placement
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert circles == []


def test_no_arrow_runs_back_up() -> None:
    graph, _ = imports()
    upward = [(a, b) for a, b in graph.edges
              if layer(a) is not None and layer(b) is not None and layer(b) > layer(a)]
    assert upward == [PLOT_CONVENIENCE]


def test_no_private_name_crosses_a_module() -> None:
    _, private = imports()
    assert [p for p in private if p != EXTENSION] == []


def test_the_checker_sees_the_arrows_it_must() -> None:
    """The checker itself: it finds lazy imports and relative imports (so an empty answer means something)."""
    graph, _ = imports()
    assert graph.has_edge("exactplace.backends.mip", "exactplace.backends.latency_mip")  # inside a function
    assert graph.has_edge("exactplace.backends.solvers.cpsat", "exactplace.backends.solvers.base")  # relative
    assert graph.has_edge("exactplace.formulations.latency", "exactplace.formulations.model")
    assert layer("exactplace.cli.main") > layer("exactplace.methods.base") > layer("exactplace.core.graph")
