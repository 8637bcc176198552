"""The contract every placement method keeps, as one check a third-party method can run too
(scikit-learn's ``check_estimator`` idea); :func:`check_method` lists what it checks.

A method of your own (a :class:`~exactplace.methods.base.Method` subclass) passes it before it
is trusted::

    @register
    class MyPlacer(Method):
        ...

    def test_my_placer_keeps_the_contract():
        check_method(MyPlacer)
"""

from __future__ import annotations

import time

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ContractError, ExactplaceError
from exactplace.core.graph import Graph, Node
from exactplace.core.objectives import OBJECTIVES
from exactplace.core.placement import Placement, Status
from exactplace.core.problem import Problem
from exactplace.evaluators import check_feasibility, evaluate
from exactplace.methods.base import Method
from exactplace.methods.front_door import solve
from exactplace.methods.registry import register, registered_methods

__all__ = ["check_method", "contract_graphs"]

#: Seconds a method may run beyond its time limit before the contract calls it late.
LATE = 2.0


def contract_graphs() -> list[tuple[str, Graph, Cluster]]:
    """The graphs the contract runs every method on: (name, graph, cluster)."""
    diamond = Graph([Node(1, 4.0, 1.0, comm=0.5, memory=1.0), Node(2, 3.0, 2.0, comm=0.5, memory=1.0),
                     Node(3, 2.0, 1.0, comm=0.25, memory=1.0), Node(4, 1.0, None)], [(1, 2), (1, 3), (2, 4), (3, 4)])
    rng = np.random.default_rng(0)
    n = 60
    nodes = [Node(i, float(rng.uniform(1, 5)), float(rng.uniform(0.2, 2)) if i % 7 else None,
                  memory=float(rng.uniform(0.5, 1.5)), comm=float(rng.uniform(0, 0.5))) for i in range(n)]
    edges = sorted({(i, i + 1) for i in range(n - 1)} | {(i, int(j)) for i in range(n - 3)
                                                         for j in rng.choice(np.arange(i + 2, n), 1)})
    branchy = Graph(nodes, edges)
    return [("diamond", diamond, Cluster(accelerators=2, memory=2.0, cpus=1)),
            ("branchy", branchy, Cluster(accelerators=3, memory=12.0, cpus=1))]


def _require(condition: bool, method: str, what: str) -> None:
    if not condition:
        raise ContractError(f"Method {method!r} breaks the method contract: {what}.")


#: The schedule a method that models one (``Method.schedules``) is held to the contract under.
CONTRACT_SCHEDULE = {"schedule": "1f1b", "microbatches": 4}


def _solve(graph: Graph, cluster: Cluster, objective: str, name: str, time_limit: float, where: str,
           scoring: dict) -> Placement:
    """``solve``, with any error it raises (the referee's included) reported as a broken contract."""
    try:
        return solve(graph, cluster, objective=objective, method=name, time_limit=time_limit, **scoring)
    except ExactplaceError as error:
        raise ContractError(f"Method {name!r} breaks the method contract: {where}: {error}") from error


def check_method(cls: type[Method], time_limit: float = 5.0) -> None:
    """Hold ``cls`` to the method contract; registers it if it is not yet.

    The checks:

    * its declarations are complete and consistent: name, description, objectives known to
      exactplace, every option named as its key, documented, its default accepted by its own
      constraint; an exact method states its space;
    * on small graphs (:func:`contract_graphs`: a diamond, and a 60-node branchy graph with a
      memory limit) for every objective it declares: it returns within its time limit (plus
      :data:`LATE` seconds), a placement that keeps its promised structure and whose objective
      is the evaluator's, or a result without a placement (the front door states why); an exact
      method that hit no limit is optimal with a bound over its space; the same call gives the
      same placement twice (methods are deterministic for a seed). A method that models a pipeline
      schedule runs and is scored under :data:`CONTRACT_SCHEDULE`.

    Raises
    ------
    ContractError
        The first check that fails, naming the method and what it broke.

    Examples
    --------
    >>> from exactplace.methods.registry import registered_methods
    >>> check_method(registered_methods()["greedy"])
    """
    name = getattr(cls, "name", None)
    _require(isinstance(name, str) and bool(name), repr(cls), "no name")
    _require(bool(getattr(cls, "description", "")), name, "no description")
    _require(bool(cls.objectives) and set(cls.objectives) <= set(OBJECTIVES), name,
             f"objectives {cls.objectives!r} are not among {list(OBJECTIVES)}")
    _require(not cls.exact or cls.space is not None, name, "an exact method must state the space it searches")
    for key, option in cls.options.items():
        _require(option.name == key, name, f"option {key!r} is declared under the name {option.name!r}")
        _require(bool(option.doc), name, f"option {key!r} has no documentation")
        _require(option.default is None or option.constraint.accepts(option.default), name,
                 f"option {key!r}'s default {option.default!r} breaks its own constraint")
    if not cls.available():
        return  # nothing more can be checked without what it needs
    if registered_methods().get(name) is not cls:
        register(cls)
    scoring = CONTRACT_SCHEDULE if cls.schedules else {}
    for graph_name, graph, cluster in contract_graphs():
        for objective in cls.objectives:
            where = f"{objective} on the {graph_name} graph"
            start = time.monotonic()
            p = _solve(graph, cluster, objective, name, time_limit, where, scoring)
            _require(time.monotonic() - start <= time_limit + LATE, name,
                     f"{where}: ran {time.monotonic() - start:.1f} s with a {time_limit:g} s time limit")
            _require(p.method == name and bool(p.solver), name, f"{where}: the result names no solver")
            if p.has_solution:
                promised = cls.promises(Problem(graph, cluster, objective))
                broken = check_feasibility(graph, cluster, p.device, objective=objective, q=p.q, subgraph=p.subgraph,
                                           guarantees=promised, **scoring)
                _require(not broken, name, f"{where}: its placement breaks {broken[0] if broken else ''}")
                options = {"subgraph": p.subgraph} if p.subgraph is not None else dict(scoring)
                _require(p.objective == evaluate(graph, cluster, p.device, objective, **options), name,
                         f"{where}: the objective is not the evaluator's")
                again = _solve(graph, cluster, objective, name, time_limit, where, scoring)
                _require(again.limit is not None or p.limit is not None
                         or (again.device is not None and np.array_equal(again.device, p.device)), name,
                         f"{where}: two identical calls gave different placements")
            else:
                _require(p.status in (Status.INFEASIBLE, Status.NO_SOLUTION), name,
                         f"{where}: no placement, but status {p.status}")
            if cls.exact and p.limit is None and p.has_solution and objective == cls.objectives[0]:
                _require(p.status is Status.OPTIMAL and p.bound is not None and p.space is not None, name,
                         f"{where}: an exact method that hit no limit must be optimal with a bound")
