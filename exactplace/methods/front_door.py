"""The front door: :func:`solve` validates its input, picks a method, runs it and referees the result."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import (
    ExactplaceError,
    InfeasibleError,
    ParameterError,
    PlacementError,
    SolverUnavailableError,
    check_param,
)
from exactplace.core.graph import Graph
from exactplace.core.io import Workload
from exactplace.core.placement import Placement, Status
from exactplace.evaluators import check_feasibility, evaluate
from exactplace.evaluators.placement_array import as_device_array
from exactplace.methods.registry import OBJECTIVES, Method, MethodResult, Problem, get_method, registered_methods

__all__ = ["AUTO_ORDER", "EVALUATOR_OPTIONS", "check_fits", "solve"]

#: Options that change the objective itself; every method sees them and the evaluator scores with them.
EVALUATOR_OPTIONS: dict[str, tuple[str, ...]] = {"throughput": ("overlap", "gpipe"), "latency": ()}

#: ``method="auto"`` tries these in order and takes the first that is available and suited to the instance.
AUTO_ORDER: dict[str, tuple[str, ...]] = {"throughput": ("dp", "dpl", "greedy"), "latency": ("greedy",)}


def check_fits(graph: Graph, cluster: Cluster) -> None:
    """Raise :class:`InfeasibleError` if some node or colocation class fits on no device.

    A class can go on a CPU core when the cluster has one (CPUs have no memory cap);
    otherwise every node must be supported on accelerators and the class must fit in
    the largest accelerator memory.
    """
    if cluster.cpus > 0:
        return
    if cluster.accelerators == 0:
        raise InfeasibleError("The cluster has no device.")
    unsupported = np.flatnonzero(~graph.supported)
    if unsupported.size:
        raise InfeasibleError(
            f"{graph.describe(int(unsupported[0])).capitalize()} cannot run on an accelerator "
            "and the cluster has no CPU."
        )
    class_memory = np.bincount(graph.color, weights=graph.memory)
    too_big = np.flatnonzero(class_memory > cluster.memory_limit.max())
    if too_big.size:
        c = int(too_big[0])
        members = np.flatnonzero(graph.color == c)
        what = (graph.describe(int(members[0])) if members.size == 1
                else f"the color class of {graph.describe(int(members[0]))} ({members.size} nodes)")
        raise InfeasibleError(
            f"{what[0].upper()}{what[1:]} needs {class_memory[c]:.6g} bytes, more than the largest accelerator "
            f"({cluster.max_memory:.6g} bytes), and the cluster has no CPU."
        )


def _warm_start_array(graph: Graph, cluster: Cluster, warm_start: Any) -> np.ndarray | None:
    """The warm start as a device array; any problem with it is a ParameterError naming 'warm_start'."""
    try:
        return _warm_start_devices(graph, cluster, warm_start)
    except (ExactplaceError, ValueError, TypeError, KeyError) as error:
        shown = (f"a {type(warm_start).__name__} of {len(warm_start)} entries"
                 if hasattr(warm_start, "__len__") and not isinstance(warm_start, str) else repr(warm_start))
        raise ParameterError(
            "The 'warm_start' parameter of solve must be a Placement, a device array or a {node id: device} "
            f"mapping placing every node of this graph on this cluster ({error}). Got {shown} instead."
        ) from None


def _warm_start_devices(graph: Graph, cluster: Cluster, warm_start: Any) -> np.ndarray | None:
    if warm_start is None:
        return None
    if isinstance(warm_start, Placement):
        if warm_start.device is None:
            return None
        warm_start = warm_start.device
    if isinstance(warm_start, Mapping):
        names = {name: d for d, name in enumerate(cluster.device_names())}
        array = np.full(graph.n, -1, dtype=np.int64)
        for node_id, dev in warm_start.items():
            if isinstance(dev, str):
                if dev not in names:
                    lacks = f"which the cluster lacks ({', '.join(names)})"
                    raise PlacementError(f"node {node_id} is put on {dev!r}, {lacks}")
                dev = names[dev]
            array[graph.index_of(node_id)] = dev
        missing = np.flatnonzero(array < 0)
        if missing.size:
            raise PlacementError(f"{graph.describe(int(missing[0]))} has no device")
        warm_start = array
    return as_device_array(graph, cluster, warm_start)


def _choose(problem: Problem) -> type[Method]:
    methods = registered_methods()
    for name in AUTO_ORDER[problem.objective]:
        cls = methods.get(name)
        if cls is not None and cls.available() and cls.suitable(problem):
            return cls
    raise SolverUnavailableError(f"No available method suits objective {problem.objective!r} on this instance.")


def solve(
    graph: Graph | Workload,
    cluster: Cluster | None = None,
    objective: str = "throughput",
    method: str = "auto",
    time_limit: float | None = None,
    gap: float = 0.01,
    warm_start: Placement | np.ndarray | Mapping[int, Any] | None = None,
    **options: Any,
) -> Placement:
    """Place a graph's nodes on a cluster's devices, optimizing ``objective``.

    Parameters
    ----------
    graph : Graph or Workload
        The graph; a :class:`Workload` also supplies the cluster.
    cluster : Cluster, optional
        Required with a bare Graph; overrides a Workload's cluster.
    objective : {"throughput", "latency"}, default "throughput"
        ``"throughput"`` minimizes max-load (time per sample of pipelined execution);
        ``"latency"`` minimizes single-sample latency.
    method : str, default "auto"
        A registered method (``exactplace.available_methods()``). ``"auto"`` takes the
        first available of ``AUTO_ORDER[objective]`` that suits the instance (for
        throughput: the exact DP when the ideals fit in memory, else DPL, else greedy).
    time_limit : float, optional
        Seconds; the method returns its best placement when it runs out (``limit="time"``).
    gap : float, default 0.01
        Relative optimality gap at which MIP methods may stop.
    warm_start : Placement, device array or {node id: device}, optional
        A starting placement for methods that use one.
    **options
        ``overlap`` / ``gpipe`` (throughput objective variants), plus method-specific options.

    Returns
    -------
    Placement
        Its ``objective`` is recomputed by the evaluator, never taken from the method.

    Raises
    ------
    ParameterError
        An invalid parameter (the message names it).
    InfeasibleError
        Some node or colocation class fits on no device.
    SolverUnavailableError
        The method needs a module that is not installed.

    Examples
    --------
    >>> from exactplace.core.io import read_workload
    >>> from exactplace.data import workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> p = solve(w, method="greedy")
    >>> p.status.value, p.objective > 0
    ('feasible', True)
    """
    if isinstance(graph, Workload):
        cluster = cluster if cluster is not None else graph.cluster
        graph = graph.graph
    check_param(isinstance(graph, Graph), "graph", "solve", "a Graph or a Workload", type(graph).__name__)
    check_param(isinstance(cluster, Cluster), "cluster", "solve", "a Cluster (required with a bare Graph)", cluster)
    check_param(objective in OBJECTIVES, "objective", "solve", f"one of {list(OBJECTIVES)}", objective)
    check_param(isinstance(method, str), "method", "solve", "a method name", method)
    check_param(
        time_limit is None or (isinstance(time_limit, (int, float)) and not isinstance(time_limit, bool)
                               and time_limit > 0 and not math.isnan(time_limit)),
        "time_limit", "solve", "a positive number or None", time_limit,
    )
    check_param(
        isinstance(gap, (int, float)) and not isinstance(gap, bool) and 0 <= gap < 1,
        "gap", "solve", "a number in [0, 1)", gap,
    )
    start = time.monotonic()
    deadline = None if time_limit is None or math.isinf(time_limit) else start + time_limit
    # Every parameter is checked before the instance itself (check_fits), so a bad call is
    # reported as such even on a hopeless instance.
    warm = _warm_start_array(graph, cluster, warm_start)
    problem = Problem(graph, cluster, objective, deadline, float(gap), warm, dict(options))
    cls = _choose(problem) if method == "auto" else get_method(method, objective)
    allowed = set(EVALUATOR_OPTIONS[objective]) | set(cls.option_names)
    for key in options:
        check_param(key in allowed, key, "solve", f"one of the options of method {cls.name!r}: {sorted(allowed)}", key)
    for key in EVALUATOR_OPTIONS[objective]:
        if key in options:
            check_param(isinstance(options[key], (bool, np.bool_)), key, "solve", "True or False", options[key])
    check_fits(graph, cluster)
    if not cls.available():
        raise SolverUnavailableError(f"Method {cls.name!r} needs {', '.join(cls.requires)}, which is not installed.")

    try:
        result = cls().run(problem)
    except KeyboardInterrupt:
        # Ctrl-C during a method that does not handle it itself: keep the warm start, if any.
        result = MethodResult(warm, Status.FEASIBLE if warm is not None else Status.NO_SOLUTION, limit="interrupt")
    wall = time.monotonic() - start
    return _referee(problem, cls, result, wall)


def _referee(problem: Problem, cls: type[Method], result: MethodResult, wall: float) -> Placement:
    graph, cluster = problem.graph, problem.cluster
    evaluator_options = {k: problem.options[k] for k in EVALUATOR_OPTIONS[problem.objective] if k in problem.options}
    objective_value = None
    device = result.device
    if device is not None:
        device = as_device_array(graph, cluster, device).copy()
        violations = check_feasibility(graph, cluster, device, contiguous=cls.contiguous)
        if violations:
            raise ExactplaceError(
                f"Method {cls.name!r} returned an infeasible placement ({len(violations)} violations), "
                f"first: {violations[0]}. This is a bug in the method; please report it."
            )
        objective_value = evaluate(graph, cluster, device, problem.objective, **evaluator_options)
        if result.bound is not None and result.bound > objective_value * (1 + 1e-9) + 1e-9:
            raise ExactplaceError(
                f"Method {cls.name!r} claims a lower bound {result.bound} above the evaluated objective "
                f"{objective_value}. This is a bug in the method; please report it."
            )
    return Placement(
        graph=graph, cluster=cluster, device=device, objective_name=problem.objective,
        objective=objective_value, status=result.status, method=cls.name, solver=result.solver,
        bound=result.bound, limit=result.limit, wall_seconds=wall, timings=result.timings,
        info={**result.info, "options": dict(problem.options)},
    )
