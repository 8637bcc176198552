"""The front door: :func:`solve` validates its input, picks a method, runs it and referees the result."""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import Constraints, DeviceRules
from exactplace.core.errors import (
    ExactplaceError,
    ParameterError,
    PlacementError,
    SolverUnavailableError,
    TooLargeError,
    check_param,
)
from exactplace.core.failures import failures_during
from exactplace.core.graph import Graph
from exactplace.core.interrupt import handled_interrupt
from exactplace.core.objectives import OBJECTIVES, SCORE_ONLY, SCORING_OPTIONS
from exactplace.core.params import Real, brief, validate_options
from exactplace.core.placement import Limit, Placement, Status
from exactplace.core.placement_array import as_device_array, as_replicas_array, as_subgraph_array
from exactplace.core.problem import DEFAULT_REL_GAP, OBJECTIVE_OPTIONS, MethodResult, Problem
from exactplace.core.schedule import check_schedule
from exactplace.evaluators import check_feasibility, evaluate
from exactplace.evaluators.feasibility import Guarantees, check_fits, constraint_violations
from exactplace.io import Workload
from exactplace.methods.base import Method
from exactplace.methods.catalog import AUTO_ORDER
from exactplace.methods.registry import get_method, registered_methods

__all__ = ["AutoPlan", "auto_plan", "solve"]

_TIME_LIMIT = Real(low=0, low_closed=False, finite=False)
#: A cluster may state more accelerators (or CPUs) than the graph has nodes up to this many; beyond,
#: the per-device arrays the evaluators build would be the problem (10**9 of them: 8 GB each).
#: ``Cluster.for_nodes`` gives the same problem at the graph's size.
LARGE_CLUSTER = 2**20
_REL_GAP = Real(low=0, high=1, high_closed=False)


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
    if warm_start is None or (isinstance(warm_start, str) and warm_start == "auto"):
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


def _declarers(name: str) -> list[str]:
    return [m for m, cls in registered_methods().items() if name in cls.options]


def _check_options(objective: str, method: str, options: Mapping[str, Any]) -> None:
    """Every option is known and its value valid, whichever method ends up running."""
    objective_options = {k: OBJECTIVE_OPTIONS[k] for k in OBJECTIVE_OPTIONS if k in SCORING_OPTIONS[objective]}
    methods = registered_methods()
    for key, value in options.items():
        if key in objective_options:
            validate_options({key: value}, objective_options, "solve")
            continue
        declarers = _declarers(key)
        if not declarers:
            known = sorted({*objective_options, *(o for cls in methods.values() for o in cls.options)})
            raise ParameterError(
                f"solve has no option {key!r} for objective {objective!r}; the options are {known}."
            )
        if method != "auto" and key not in methods[method].options:
            raise ParameterError(
                f"Method {method!r} takes no option {key!r}; the methods that take it: {', '.join(declarers)}."
            )
        validate_options({key: value}, methods[method if method != "auto" else declarers[0]].options, "solve")


#: Options that change what a method shows, never what it finds: ``method="auto"`` passes over no method for them,
#: and the method it picks runs without those it does not take.
OUTPUT_OPTIONS = ("log", "progress")


def _choose(problem: Problem) -> tuple[type[Method], dict[str, str], Problem]:
    """``method="auto"``: the first method of ``AUTO_ORDER`` that can run the problem, why others were not, and the
    problem as that method takes it (without the output options it does not take)."""
    methods = registered_methods()
    passed_over: dict[str, str] = {}
    own = [k for k in problem.options if k not in OBJECTIVE_OPTIONS and k not in OUTPUT_OPTIONS]
    for name in AUTO_ORDER[problem.objective]:
        cls = methods[name]
        fitted = dataclasses.replace(problem, options={
            k: v for k, v in problem.options.items() if k not in OUTPUT_OPTIONS or k in cls.options})
        reason = None
        if problem.option("schedule") is not None and not cls.schedules:
            reason = "does not model a pipeline schedule"
        elif problem.rules is not None and not cls.device_rules:
            reason = f"does not hold {problem.rules.what}"
        elif not cls.available():
            reason = f"not installed (needs {', '.join(cls.missing())})"
        elif any(k not in cls.options for k in own):
            reason = f"takes no option {next(k for k in own if k not in cls.options)!r}"
        else:
            try:
                cls.check(fitted)
                reason = cls.unsuited(fitted)
            except (ParameterError, TooLargeError) as error:
                reason = str(error)
        if reason is None:
            return cls, passed_over, fitted
        passed_over[name] = reason
    reasons = "; ".join(f"{name}: {why}" for name, why in passed_over.items())
    raise SolverUnavailableError(
        f"No method can solve this {problem.objective!r} problem with method='auto' ({reasons})."
    )


def _instance(graph: Graph | Workload, cluster: Cluster | None, objective: str,
              caller: str) -> tuple[Graph, Cluster, dict[str, int]]:
    """The graph and cluster to solve (a Workload's own cluster unless one is given, with the device counts it
    states beyond one per node), checked with the objective; errors name ``caller``'s parameters."""
    stated: dict[str, int] = {}
    if isinstance(graph, Workload):
        if cluster is None:
            cluster, stated = graph.cluster, dict(graph.stated)
        graph = graph.graph
    check_param(isinstance(graph, Graph), "graph", caller, "a Graph or a Workload", type(graph).__name__)
    check_param(isinstance(cluster, Cluster), "cluster", caller, "a Cluster (required with a bare Graph)", cluster)
    check_param(max(cluster.accelerators, cluster.cpus) <= max(graph.n, LARGE_CLUSTER), "cluster", caller,
                f"at most {LARGE_CLUSTER:,} accelerators and CPUs, or one per node (a placement uses at most one "
                f"device per node: cluster.for_nodes({graph.n}) states the same problem)", cluster)
    check_param(isinstance(objective, str) and objective in OBJECTIVES, "objective", caller,
                f"one of {list(OBJECTIVES)}", objective)
    if objective != "throughput":
        cluster.require_one_level(f"The {objective} objective")
    return graph, cluster, stated


@dataclasses.dataclass(frozen=True)
class AutoPlan:
    """What ``method="auto"`` would run on a problem.

    Attributes
    ----------
    method : str
        The method it picks.
    outlook : str
        What to expect of that method's run (:meth:`Method.outlook`): how it ends, roughly how long.
    passed_over : dict
        Each method before it in ``AUTO_ORDER``, with why it was passed over.
    """

    method: str
    outlook: str
    passed_over: dict[str, str]


def auto_plan(graph: Graph | Workload, cluster: Cluster | None = None, objective: str = "throughput",
              time_limit: float | None = None) -> AutoPlan:
    """Which method ``solve(..., method="auto")`` would run, and what to expect of it, without running it.

    The trial runs that decide (the DP past its estimate, the bounded search on a graph too wide
    for the DP) do run, as in ``solve``: their time is the answer's.

    Examples
    --------
    >>> from exactplace import read_workload, workload_path
    >>> plan = auto_plan(read_workload(workload_path("layer_bert24_inference")))
    >>> plan.method, plan.outlook.startswith("exact; 30 ideals"), plan.passed_over
    ('dp', True, {})
    """
    graph, cluster, _ = _instance(graph, cluster, objective, "auto_plan")
    check_param(time_limit is None or _TIME_LIMIT.accepts(time_limit), "time_limit", "auto_plan",
                "a positive number or None", brief(time_limit))
    start = time.monotonic()
    deadline = None if time_limit is None or math.isinf(time_limit) else start + float(time_limit)
    problem = Problem(graph, cluster, objective, deadline, limit_given=time_limit is not None, started=start)
    cls, passed_over, fitted = _choose(problem)
    return AutoPlan(cls.name, cls.outlook(fitted), passed_over)


def solve(
    graph: Graph | Workload,
    cluster: Cluster | None = None,
    objective: str = "throughput",
    method: str = "auto",
    time_limit: float | None = None,
    rel_gap: float = DEFAULT_REL_GAP,
    warm_start: Placement | np.ndarray | Mapping[int, Any] | str | None = "auto",
    constraints: Constraints | Mapping[str, Any] | None = None,
    **options: Any,
) -> Placement:
    """Place a graph's nodes on a cluster's devices, optimizing ``objective``.

    Parameters
    ----------
    graph : Graph or Workload
        The graph; a :class:`Workload` also supplies the cluster.
    cluster : Cluster, optional
        Required with a bare Graph; overrides a Workload's cluster.
    objective : {"throughput", "latency", "makespan"}, default "throughput"
        ``"throughput"`` minimizes max-load (time per sample of pipelined execution);
        ``"latency"`` minimizes single-sample latency; ``"makespan"`` minimizes the simulated
        step time (:mod:`exactplace.evaluators.makespan`). Every method takes ``"makespan"``: one
        that optimizes another objective runs for its own and is scored by the simulator, with
        the placer's execution order (``info["order"]``, node positions) where it gives one.
    method : str, default "auto"
        A registered method (``exactplace.available_methods()``). ``"auto"`` takes the
        first of ``AUTO_ORDER[objective]`` that is installed, takes the given options and
        suits the instance (for throughput: the exact DP when the ideals fit in memory,
        else DPL, else greedy); ``info["passed_over"]`` says why earlier ones were not used.
    time_limit : float, optional
        Seconds; the method returns its best placement when it runs out (``limit=Limit.TIME``).
        Without one, ``mip`` stops after 60 s and says so in ``info["time_limit"]``;
        ``float("inf")`` lets it run until it proves ``rel_gap``.
    rel_gap : float, default 1e-4
        Relative optimality gap at which methods with a bound may stop. The status is
        ``optimal`` only when the achieved gap (``Placement.gap``) is within it (plus 1e-6
        of numerical noise: ``rel_gap=0`` asks for a proof to the solvers' tolerance). The old name
        ``gap=`` still works, with a DeprecationWarning.
    warm_start : Placement, device array, {node id: device}, "auto" or None, default "auto"
        A starting placement for methods that use one. ``"auto"``: the method's own default
        start (``mip`` starts from the DP, DPL or greedy); None: no start at all.
    constraints : Constraints or mapping, optional
        What the placement must satisfy beyond the graph's colour classes: pins, forbidden devices,
        nodes kept together, edges not cut, at most so many stages, a memory reserve
        (:mod:`exactplace.core.constraints`). Every method solves the problem they lower to, so the
        bound and status are over the placements that satisfy them; ParameterError for what no
        method holds exactly yet. The plan keeps them in ``info["constraints"]``. Default: a
        Workload's own (its file's ``"constraints"``), none for a bare Graph.
    **options
        ``overlap`` / ``gpipe`` (throughput objective variants), plus method-specific
        options (``exactplace methods`` lists them with their constraints).

    Returns
    -------
    Placement
        Its ``objective`` is recomputed by the evaluator, never taken from the method.
        A method stopped by ``time_limit`` before it found anything returns the greedy
        placement (status ``feasible``, ``limit=Limit.TIME``, ``info["returned"]``). When a
        workload states more accelerators or CPUs than it has nodes, ``info["stated_devices"]``
        holds those counts (the cluster solved on has one per node: the same problem).
        An instance without any feasible placement is returned with status
        ``infeasible`` and the reason in ``info["reason"]``, never raised.

    Raises
    ------
    ParameterError
        An invalid parameter or option (the message names it).
    SolverUnavailableError
        The method needs a module that is not installed.

    Examples
    --------
    >>> from exactplace.io import read_workload
    >>> from exactplace.data import workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> p = solve(w, method="greedy")
    >>> p.status.value, p.objective > 0
    ('feasible', True)
    """
    if "gap" in options:
        warnings.warn("solve(gap=...) is deprecated; use rel_gap=...", DeprecationWarning, stacklevel=2)
        rel_gap = options.pop("gap")
    if constraints is None and isinstance(graph, Workload) and graph.constraints:
        constraints = graph.constraints  # the file's own, unless the caller gives others
    graph, cluster, stated = _instance(graph, cluster, objective, "solve")
    if constraints is not None:
        if not isinstance(constraints, Constraints):
            constraints = Constraints.from_dict(constraints)
        if constraints:
            return _solve_constrained(graph, cluster, constraints, objective, method, time_limit, rel_gap, warm_start,
                                      options)
    return _solve(graph, cluster, objective, method, time_limit, rel_gap, warm_start, options, stated)


def _solve(graph: Graph, cluster: Cluster, objective: str, method: str, time_limit: float | None, rel_gap: float,
           warm_start: Any, options: Mapping[str, Any], stated: Mapping[str, int] | None = None,
           rules: DeviceRules | None = None) -> Placement:
    """:func:`solve` once the instance is read and the constraints lowered (``rules``: what lowering left)."""
    check_param(isinstance(method, str), "method", "solve", "a method name", method)
    if method != "auto":
        get_method(method, objective)
    check_param(time_limit is None or _TIME_LIMIT.accepts(time_limit), "time_limit", "solve",
                "a positive number or None", brief(time_limit))
    check_param(_REL_GAP.accepts(rel_gap), "rel_gap", "solve", "a number in [0, 1)", brief(rel_gap))
    _check_options(objective, method, options)
    if options.get("schedule") is not None or options.get("microbatches") is not None:
        check_schedule(options.get("schedule"), options.get("microbatches"))
    start = time.monotonic()
    deadline = None if time_limit is None or math.isinf(time_limit) else start + float(time_limit)
    # Every parameter is checked before the instance itself (check_fits), so a bad call is
    # reported as such even on a hopeless instance.
    warm = _warm_start_array(graph, cluster, warm_start)
    warm_subgraph = (warm_start.subgraph if isinstance(warm_start, Placement) and warm is not None
                     and objective == "latency" else None)
    problem = Problem(graph, cluster, objective, deadline, float(rel_gap), warm, dict(options),
                      default_start=isinstance(warm_start, str) and warm_start == "auto",
                      limit_given=time_limit is not None, warm_subgraph=warm_subgraph, started=start, rules=rules)
    passed_over: dict[str, str] = {}
    if method == "auto":
        cls, passed_over, problem = _choose(problem)
    else:
        cls = get_method(method, objective)
        if not cls.available():
            raise SolverUnavailableError(
                f"Method {cls.name!r} needs {', '.join(cls.missing())}, which is not installed."
            )
        if problem.option("schedule") is not None and not cls.schedules:
            schedulers = ", ".join(m for m, c in registered_methods().items() if c.schedules)
            raise ParameterError(f"Method {cls.name!r} does not model a pipeline schedule (the 'schedule' option); "
                                 f"the methods that do: {schedulers}.")
        if rules is not None and not cls.device_rules:
            holders = ", ".join(m for m, c in registered_methods().items() if c.device_rules)
            raise ParameterError(f"Method {cls.name!r} does not hold {rules.what} (constraints that name devices); "
                                 f"the methods that do: {holders}.")
        cls.check(problem)
    extra: dict[str, Any] = {"passed_over": passed_over} if passed_over else {}
    if stated:  # the workload states more devices than nodes; the cluster holds one per node
        extra["stated_devices"] = stated
    reason = check_fits(graph, cluster)
    if reason is not None:
        # Found before any method ran: the solver field says so rather than naming an engine.
        result = MethodResult(None, Status.INFEASIBLE, solver="precheck", info={"reason": reason})
        return _referee(problem, cls, result, time.monotonic() - start, extra)

    with failures_during() as failures:
        try:
            result = _run(cls, problem)
        except KeyboardInterrupt:
            # Ctrl-C during a method that does not handle it itself: keep the warm start, if any.
            status = Status.FEASIBLE if warm is not None else Status.NO_SOLUTION
            result = MethodResult(warm, status, limit=Limit.INTERRUPT)
    if failures:  # what the result survived: told apart from a method that proves no bound
        counted = {failure: failures.count(failure) for failure in failures}
        said = [failure if times == 1 else f"{failure} ({times} solves)" for failure, times in counted.items()]
        result = dataclasses.replace(result, info={**result.info, "solver_failures": said})
    if result.device is None and result.limit is Limit.TIME and rules is None:  # greedy knows no device rules
        result = _fallback(problem, result)
    if result.limit is Limit.INTERRUPT:  # the caller gets the result; the process is not ending by Ctrl-C
        handled_interrupt()
    wall = time.monotonic() - start
    return _referee(problem, cls, result, wall, extra)


def _solve_constrained(graph: Graph, cluster: Cluster, constraints: Constraints, objective: str, method: str,
                       time_limit: float | None, rel_gap: float, warm_start: Any,
                       options: Mapping[str, Any]) -> Placement:
    """:func:`solve` under ``constraints``: solve the problem they lower to, then restore the placement to
    the stated graph and cluster, rescore it there and hold it to every constraint."""
    if options.get("replication"):
        raise ParameterError("solve: constraints and replication=True cannot be combined yet.")
    scheduled = options.get("schedule") is not None
    lowering = constraints.lowering(graph, cluster, ordered=scheduled)
    if lowering.rules is not None and not any(
            c.device_rules and (objective in c.objectives or objective in SCORE_ONLY) and c.schedules >= scheduled
            for c in registered_methods().values()):
        raise ParameterError(f"solve: no method holds {lowering.unheld} exactly yet; the constraints every method "
                             "holds are pins to the CPU (or one CPU core), together, no_cut, max_stages on identical "
                             "accelerators and reserve.")
    warm: Any = warm_start
    if not isinstance(warm_start, str) and warm_start is not None:
        given = _warm_start_array(graph, cluster, warm_start)
        keep = given is not None and not constraint_violations(graph, cluster, given, constraints)
        warm = lowering.lowered(given) if keep else None
    inner = _solve(lowering.graph, lowering.cluster, objective, method, time_limit, rel_gap, warm, options,
                   rules=lowering.rules)
    info = {**inner.info, "constraints": constraints.to_dict()}
    if inner.device is None:
        return dataclasses.replace(inner, graph=graph, cluster=cluster, info=info)
    device = lowering.restore(inner.device)
    scoring = {k: v for k, v in options.items() if k in SCORING_OPTIONS[objective]}
    if inner.subgraph is not None:
        scoring["subgraph"] = inner.subgraph
    if objective == "makespan" and inner.info.get("order") is not None:
        scoring["order"] = inner.info["order"]
    broken = check_feasibility(graph, cluster, device, objective=objective, q=inner.q, subgraph=inner.subgraph,
                               schedule=options.get("schedule"), microbatches=options.get("microbatches"))
    broken += constraint_violations(graph, cluster, device, constraints)
    if broken:
        raise ExactplaceError(f"Method {inner.method!r} returned a placement that breaks the constraints, first: "
                              f"{broken[0]}. This is a bug; please report it.")
    value = evaluate(graph, cluster, device, objective, **scoring)
    return dataclasses.replace(inner, graph=graph, cluster=cluster, device=device, objective=value, info=info)


def _run(cls: type[Method], problem: Problem) -> MethodResult:
    """Run the method; for a ``SCORE_ONLY`` objective it does not optimize, run it for its own objective.

    Such a placement is then only scored under the requested objective: it is merely feasible,
    and the method's bound (over its own objective) is dropped.
    """
    if problem.objective in cls.objectives or problem.objective not in SCORE_ONLY:
        return cls().run(problem)
    own = dataclasses.replace(problem, objective=cls.objectives[0])
    result = cls().run(own)
    status = Status.FEASIBLE if result.status is Status.OPTIMAL else result.status
    return dataclasses.replace(result, status=status, bound=None, info={**result.info, "optimized": own.objective})


#: ``info["returned"]`` of a placement that did not come from the method's own search.
FALLBACK = "greedy placement (the time limit came before the method had one)"


def _fallback(problem: Problem, result: MethodResult) -> MethodResult:
    """A method stopped by its time limit with nothing to show: the quick greedy placement instead.

    The result keeps ``limit=Limit.TIME`` and says so in ``info["returned"]``; a hopeless
    instance (greedy finds nothing either) keeps NO_SOLUTION. Greedy's placement need not lie
    in the method's space, so the method's bound moves to ``info["bound_of_method"]`` and the
    referee holds the placement to greedy's guarantee, not the method's. Ctrl-C during greedy:
    the method's result, with ``limit=Limit.INTERRUPT`` (the caller stops as on any Ctrl-C).
    """
    greedy = registered_methods()["greedy"]  # through the catalog: methods never import a placer
    if problem.objective not in greedy.objectives or problem.option("schedule") is not None:
        return result
    try:
        quick = greedy().run(problem)
    except ExactplaceError:
        return result
    except KeyboardInterrupt:
        return dataclasses.replace(result, limit=Limit.INTERRUPT)
    if quick.device is None:
        return result
    info = {**result.info, "returned": FALLBACK, "bound_of_method": result.bound}
    return MethodResult(quick.device, Status.FEASIBLE, limit=Limit.TIME, solver=result.solver,
                        trace=result.trace, timings=result.timings, info=info)


def _referee(
    problem: Problem, cls: type[Method], result: MethodResult, wall: float, extra: Mapping[str, Any]
) -> Placement:
    """Check the method's placement against what it promised, re-score it with the evaluator, and
    call it optimal exactly when the achieved gap is within the asked ``rel_gap`` (a stopped method's placement
    and bound that meet it are optimal too, ``info["certified_by"]`` naming the bound's prover)."""
    graph, cluster = problem.graph, problem.cluster
    evaluator_options = {k: problem.options[k] for k in SCORING_OPTIONS[problem.objective]
                         if k in problem.options}
    objective_value = None
    device, subgraph, status, limit, info = result.device, None, result.status, result.limit, dict(result.info)
    replicas = None
    if device is not None:
        device = as_device_array(graph, cluster, device).copy()
        if result.subgraph is not None:
            subgraph = as_subgraph_array(graph, cluster, device, result.subgraph).copy()
        if result.replicas is not None and "returned" not in result.info:  # a fallback has no replicas
            replicas = as_replicas_array(graph, cluster, device, result.replicas).copy()
            evaluator_options["replicas"] = replicas
        # A fallback or warm start kept by a stopped method carries only the basic guarantees.
        promised = cls.promises(problem) if "returned" not in result.info else Guarantees()
        violations = check_feasibility(graph, cluster, device, objective=problem.objective, q=result.q,
                                       subgraph=subgraph, guarantees=promised, replicas=replicas,
                                       schedule=problem.option("schedule"),
                                       microbatches=problem.option("microbatches"))
        if violations:
            raise ExactplaceError(
                f"Method {cls.name!r} returned an infeasible placement ({len(violations)} violations), "
                f"first: {violations[0]}. This is a bug in the method; please report it."
            )
        if problem.objective == "makespan" and result.info.get("order") is not None:
            evaluator_options["order"] = result.info["order"]  # the placer's own execution order
        if subgraph is not None:
            evaluator_options["subgraph"] = subgraph
        objective_value = evaluate(graph, cluster, device, problem.objective, **evaluator_options)
        if result.bound is not None and result.bound > objective_value * (1 + 1e-9) + 1e-9:
            raise ExactplaceError(
                f"Method {cls.name!r} claims a lower bound {result.bound} above the evaluated objective "
                f"{objective_value}. This is a bug in the method; please report it."
            )
        if status is Status.OPTIMAL and not _within(objective_value, result.bound, problem.rel_gap):
            # The solver stopped at its own tolerance (or its bound was corrected for rounding):
            # the placement is good, but not proven within the gap the caller asked for.
            status = Status.FEASIBLE
            info["not_optimal"] = (f"the proven gap exceeds rel_gap={problem.rel_gap:g}"
                                   if result.bound is not None else "no bound was proven")
        elif status is Status.FEASIBLE and _within(objective_value, result.bound, problem.rel_gap):
            # The placement and the bound met within rel_gap only after the method stopped (a split taken after
            # its solver hit the time limit, a bound proven before the solver ran): proven all the same.
            status, limit = Status.OPTIMAL, None
            info.setdefault("certified_by", info.get("bound_by", result.solver or cls.engine))
    elif "reason" not in info:
        info["reason"] = _why_nothing(status, result.limit)
    return Placement(
        graph=graph, cluster=cluster, device=device, objective_name=problem.objective,
        objective=objective_value, status=status, method=cls.name,
        solver=result.solver or cls.engine,
        bound=result.bound, limit=limit, space=result.space or cls.space, wall_seconds=wall,
        trace=tuple(result.trace), subgraph=subgraph, q=result.q, timings=result.timings,
        info={**info, **extra, "options": dict(problem.options)}, replicas=replicas,
    )


def _why_nothing(status: Status, limit: Limit | None) -> str:
    """The reason of a result without a placement whose method gave none."""
    if limit is Limit.TIME:
        return ("the time limit came before the method found a placement: give it more time (time_limit) "
                "or use a faster method (greedy, dpl)")
    if limit is Limit.INTERRUPT:
        return "interrupted (Ctrl-C) before the method found a placement"
    if limit is not None:
        return f"{limit.words} stopped the method before it found a placement"
    return f"the method ended with status {status} and gave no reason"


#: Difference between objective and bound that is numerical noise, not a gap: solvers work to
#: tolerances of about 1e-6 (HiGHS's absolute MIP gap and feasibility tolerance, CP-SAT's time grid,
#: the slack a bound loses when it is corrected for rounding), so ``rel_gap=0`` means a proof to within
#: ``NOISE * max(1, |objective|)``: twice that, since a gap of exactly one tolerance computed in floats
#: may come out a rounding above it (hypothesis: GPipe times 1e-6 and 0.5, HiGHS's max load held 1e-6
#: below the evaluator's, 0.500001 - 0.5 = 1.0000000000288e-06).
NOISE = 2e-6


def _within(value: float, bound: float | None, rel_gap: float) -> bool:
    """The achieved relative gap ``(value - bound) / value`` is at most ``rel_gap`` (numerical noise aside)."""
    if bound is None:
        return False
    return value - bound <= rel_gap * abs(value) + NOISE * max(1.0, abs(value))
