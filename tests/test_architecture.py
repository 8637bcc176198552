"""The structure drawn from the code's own imports: arrows point one way.

Every ``import`` of an exactplace module in ``exactplace/`` and ``formulations/`` (module level
or inside a function: a lazy import is still an arrow) is an edge. The layers, lowest first,
are docs/layout.md's; a module may import its own layer and the layers below, never above; no
two modules import each other, however indirectly; the applications import the library, never
each other (the command line, over them all, excepted); only the solver adapters import a solver
package; and no module imports another's private (``_``) name. The one private import allowed is
the compiled extension ``exactplace._native``, by its one binding module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]

#: Lowest first: a module's layer is its subpackage (``exactplace.<layer>...``).
LAYERS = ("core", "frontends", "io", "data", "evaluators", "formulations", "solvers", "native", "improvers",
          "bounds", "methods", "heuristics", "runtime", "export", "plot", "regress", "paper", "sweep", "explain", "cli")
#: The applications: each imports the library (the layers below ``export``), none another.
APPLICATIONS = ("export", "plot", "regress", "paper", "sweep", "explain")
#: The packages only the adapters (``exactplace.solvers``) may import.
SOLVER_PACKAGES = ("highspy", "ortools", "pulp", "pyscipopt", "gurobipy")
EXTENSION = ("exactplace.native", "exactplace._native")


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
    graph, private, _ = _walk()
    return graph, private


def solver_imports() -> list[tuple[str, str]]:
    """(module, solver package) for every import of a solver package."""
    return _walk()[2]


def _walk() -> tuple[nx.DiGraph, list[tuple[str, str]], list[tuple[str, str]]]:
    known = modules()
    graph, private, solvers = nx.DiGraph(), [], []
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
                if source.split(".")[0] in SOLVER_PACKAGES:
                    solvers.append((name, source.split(".")[0]))
                if not source.startswith("exactplace"):
                    continue
                full = f"{source}.{imported}" if imported else source
                target = full if full in known else source
                if target in known and target != name:
                    graph.add_edge(name, target)
                if imported and imported.startswith("_") and not imported.startswith("__") and target != name:
                    private.append((name, full))
    return graph, private, solvers


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_no_import_circle() -> None:
    graph, _ = imports()
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert circles == []


def test_no_arrow_runs_back_up() -> None:
    graph, _ = imports()
    upward = [(a, b) for a, b in graph.edges
              if layer(a) is not None and layer(b) is not None and layer(b) > layer(a)]
    assert upward == []


def test_applications_import_the_library_never_each_other() -> None:
    graph, _ = imports()
    sideways = [(a, b) for a, b in graph.edges
                if layer(a) is not None and layer(b) is not None and layer(a) != layer(b)
                and LAYERS[layer(a)] in APPLICATIONS and LAYERS[layer(b)] in APPLICATIONS]
    assert sideways == []


def test_only_the_adapters_import_a_solver_package() -> None:
    assert [(m, p) for m, p in solver_imports() if not m.startswith("exactplace.solvers")] == []


def test_no_private_name_crosses_a_module() -> None:
    _, private = imports()
    assert [p for p in private if p != EXTENSION] == []


def test_the_checker_sees_the_arrows_it_must() -> None:
    """The checker itself: it finds lazy imports and relative imports (so an empty answer means something)."""
    graph, _ = imports()
    assert graph.has_edge("exactplace.methods.mip", "exactplace.methods.latency_mip")  # inside a function
    assert graph.has_edge("exactplace.solvers.cpsat", "exactplace.solvers.base")  # relative
    assert graph.has_edge("exactplace.formulations.latency", "exactplace.formulations.model")
    assert layer("exactplace.cli.main") > layer("exactplace.methods.base") > layer("exactplace.core.graph")
    assert ("exactplace.solvers.highs", "highspy") in solver_imports()  # inside a function
