"""The latency program (paper §4, Fig. 3 contiguous and Fig. 4 non-contiguous) on CP-SAT.

Single-sample latency under the evaluator's §4 semantics
(:mod:`exactplace.evaluators.latency`): an accelerator subgraph (a *block*) starts when
every input from outside it has finished, copies its inputs in, computes its nodes one
after another, copies its outputs out, and all its nodes finish together; a CPU node runs
as soon as its predecessors are done. With ``q`` subgraphs per accelerator (Fig. 4), an
accelerator's node set is cut into pieces by the evaluator's rule (a node's piece is one
plus the number of times a path into it left the set) and runs them one at a time; ``q=1``
is the contiguous program of Fig. 3.

Reading order: :class:`LatencyData` (what the model needs, solver-free), then
:func:`build_model`: variables, one named block per constraint family, objective; then
:func:`decode` (solution -> device array) and :func:`hint_values` (placement -> a complete
solution, the warm start).

Units and contraction
---------------------
Assignment variables are per colour class (colocation makes a class one decision); timing
variables are per node. The Appendix B contraction of :attr:`Problem.contraction` is *not*
used: its cycle fusion merges classes A, B whose class graph has ``A -> B -> A`` although no
path of nodes leaves A and comes back; for latency, A on an accelerator and B on the CPU is
then contiguous and runs (CPU nodes are separate blocks), so fusion would cut off feasible,
possibly optimal placements. Trivial merges of zero-time units are unsafe for ``q >= 2``
(a merged node can land in an earlier piece and make that piece pay a copy-out).

Memory is an integer row too: sizes scaled so the largest cap is ``2**40`` units, sizes
rounded up and caps down. The model therefore never returns a placement the evaluator
rejects, and accepts every set within the memory itself; a set that fits only thanks to the
evaluator's rounding slack (``memory * (1 + 1e-9) + 1e-9``) may be excluded.

Times are integers for CP-SAT: every time is multiplied by ``scale`` and rounded *down*, so
the model's latency of a placement never exceeds the true one by rounding and its dual bound
stays valid after the correction in :attr:`LatencyModel.bound_slack`; the evaluator recomputes
the exact objective of the decoded placement.

Tightenings tried, and what each bought (measured on the shared 2-core machine under a load
average of 9-18 from other jobs, so seconds are pessimistic; ``benchmarks/RESULTS.md``)
-------------------------------------------------------------------------------------------
* Enforcement literals instead of big-M for every conditional row on CP-SAT (block start
  after its external predecessors, node finish at its block's end). Not ablated against
  big-M on CP-SAT; MIP solvers get per-row big-M from the variable domains (see
  :class:`LatencyMIPForm`).
* CPU rows without any literal: ``F_v >= F_u + cpu_v * on_cpu(v)`` for each edge is valid for
  every placement (a node never finishes before its predecessors), so it is a plain row.
* Per-node time windows ``[head_v, UB]``: ``head_v`` is the heaviest path into v with each
  node at its cheapest device and no communication (a path's nodes compute one after
  another, in one block or across blocks), ``UB`` the warm start's latency. The mirror image
  ``F_v <= UB - tail_v`` is *not* valid: v finishes together with the successors in its block;
  ``T >= C_v + tail_v`` on the path-work variables below is. (A first version used the
  invalid window and cut off the optimum of a one-accelerator instance; a test now covers it.)
* Path-work rows ``C_v >= C_u + work_v + c_uv * sum_d |x_ud - x_vd|``, ``T >= C_v + tail_v``:
  the LP then sees that CPU nodes and block boundaries cost time. op_bert3_inference's bound
  after about one second went from 268.7 to 397.2 (optimum 408.47); on layer_resnet50 the
  bound stays at the critical path (187.5 against 1157): there the latency comes from how
  many cuts memory forces, which a fractional assignment hides.
* Warm start (the largest effect): the best of all-CPU, greedy, the linear latency DP over
  six DFS orders, the max-load DP split and DPL. Without it op_bert6_inference reached
  439.54 after 600 s; with it 438.065 within 60 s. On layer_resnet50 and op_resnet50 the
  linear DP alone (1156.9, 651.1) beats what CP-SAT found in 120 s from the max-load DP split
  (1247.6, and 712.5 in 60 s) and Gurobi's hour (1191.02, 672.06).
* Makespan bounded below by the path DP over ideals (``q=1``,
  :mod:`exactplace.backends.latency_bound`, passed in as ``prepare(lower=...)``): the largest
  effect on the bound. The LP relaxation cannot see that a chain of layers must be cut into
  several memory-sized subgraphs, each copied in and out in turn; the DP can. After 10
  minutes the best bound any solver reached on layer_gnmt_inference was 201.8 (HiGHS) and on
  layer_resnet50_inference 358.5 (CP-SAT); the DP gives 225.648 and 1156.881 in under 0.3 s,
  the optimum on both, so the warm start is certified without a solver. On the op graphs the
  reduced lattice has over 10^8 ideals and there is no DP bound.
* Makespan bounded below by the critical path and by each accelerator's serial work
  (``T >= E_b`` for every block, blocks of one accelerator chained).
* Symmetry between identical accelerators: accelerator ``d`` may hold class ``c`` only if
  accelerator ``d-1`` holds a class earlier in topological order (devices ordered by their
  first class); the warm start is relabelled to match. Not ablated.
* ``q >= 2``: the piece of every node is *exactly* the evaluator's rule (``AddMaxEquality``),
  not just a lower bound on it, so the model's schedule is the evaluator's (with lower
  bounds only, the model could run a node in a later piece than the evaluator does and
  report a latency the placement does not have).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.evaluators.latency import piece_levels

__all__ = ["LatencyData", "LatencyModel", "build_model", "decode", "hint_values", "prepare"]

#: Target magnitude of the scaled makespan: rounding costs at most n / TIME_RESOLUTION of it.
TIME_RESOLUTION = 2**26
#: Accelerator memory is scaled so the largest cap is this many units (sizes rounded up, caps down).
MEMORY_RESOLUTION = 2**40
#: No model time may exceed this many units (CP-SAT works in 64-bit integers).
MAX_UNITS = 2**50


@dataclass(frozen=True)
class LatencyData:
    """Solver-free inputs of the model: classes, scaled times, memory, edges and groups.

    Attributes
    ----------
    graph, cluster : Graph, Cluster
    q : int
        Subgraphs per accelerator (1: contiguous).
    scale : float
        Model time units per time unit.
    cls : numpy array of int, shape (n,)
        Assignment unit (colour class) of each node, numbered by topological order of first node.
    allowed : numpy array of bool, shape (classes, k)
        Whether a class may go on an accelerator (supported, fits its memory alone).
    cpu_time : numpy array of int, shape (n,)
    acc_time : numpy array of int, shape (n, k)
        Scaled compute times (accelerator time divided by the device's speed).
    group_cost : numpy array of int
        Scaled cost of each communication group.
    head, tail : numpy arrays of int, shape (n,)
        Heaviest path into each node (inclusive) and out of it (exclusive), cheapest devices,
        no communication: lower bounds on the work along any path before and after it.
    lower_bound : float
        A lower bound on the latency (time units): the critical path at the cheapest devices,
        or the ``lower`` given to :func:`prepare` when larger.
    """

    graph: Graph
    cluster: Cluster
    q: int
    scale: float
    cls: np.ndarray
    classes: int
    allowed: np.ndarray
    cpu_time: np.ndarray
    acc_time: np.ndarray
    group_cost: np.ndarray
    class_memory: np.ndarray
    memory_cap: np.ndarray
    memory_binds: bool
    head: np.ndarray
    tail: np.ndarray
    lower_bound: float
    identical: bool


def _longest_paths(graph: Graph, weight: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Heaviest path ending at each node (starting at it if ``reverse``), the node included."""
    head = weight.astype(np.float64).copy()
    preds = graph.successors if reverse else graph.predecessors
    order = graph.topological_order.tolist()
    for v in reversed(order) if reverse else order:
        if len(preds[v]):
            head[v] += head[preds[v]].max()
    return head


def prepare(graph: Graph, cluster: Cluster, q: int = 1, upper: float | None = None,
            lower: float | None = None) -> LatencyData:
    """Everything the model needs, computed once with numpy.

    ``upper`` (a known latency, e.g. the warm start's) fixes the time scale; without it the
    all-CPU / all-serial latency is used. ``lower``: a known lower bound on the latency of
    every placement of the model's space (e.g. :func:`exactplace.backends.latency_bound.path_bound`
    for ``q=1``); the model's makespan is bounded below by it (see :func:`build_model`).

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(1, 4.0, 1.0, comm=0.5), Node(2, 3.0, 2.0)], [(1, 2)])
    >>> data = prepare(g, Cluster(1, cpus=1))
    >>> data.classes, float(data.lower_bound)   # critical path at the cheapest device: 1 + 2
    (2, 3.0)
    """
    n, k = graph.n, cluster.accelerators
    first = np.full(int(graph.color.max()) + 1, n, dtype=np.int64)
    position = np.empty(n, dtype=np.int64)
    position[graph.topological_order] = np.arange(n)
    np.minimum.at(first, graph.color, position)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    cls = rank[graph.color]
    classes = len(first)

    speed = np.asarray(cluster.speed, dtype=np.float64)
    acc = (np.where(graph.supported[:, None], graph.acc_time[:, None] / speed[None, :], np.inf) if k
           else np.zeros((n, 0)))
    cheapest = np.minimum(graph.cpu_time if cluster.cpus else np.inf, acc.min(axis=1, initial=np.inf))
    lower = max(float(_longest_paths(graph, cheapest).max()), lower if lower is not None else -math.inf)
    total = float(graph.cpu_time.sum() + np.where(np.isfinite(acc), acc, 0).sum() + graph.group_cost.sum() * 2)
    if upper is None or not math.isfinite(upper) or upper <= 0:
        upper = total
    # A power of two keeps dyadic inputs exact; the sum of all times must stay far below 2^62.
    scale = min(TIME_RESOLUTION / max(upper, 1e-300), MAX_UNITS / max(total, 1e-300))
    scale = 2.0 ** math.floor(math.log2(scale)) if total > 0 else 1.0

    def floor(values: np.ndarray) -> np.ndarray:
        return np.floor(np.where(np.isfinite(values), values, 0) * scale + 1e-9).astype(np.int64)

    # Time windows from the *rounded* weights, so that they bound the model's own times.
    head = _longest_paths(graph, floor(cheapest))
    tail = _longest_paths(graph, floor(cheapest), reverse=True) - floor(cheapest)
    class_memory = np.bincount(cls, weights=graph.memory, minlength=classes)
    supported = np.bincount(cls, weights=~graph.supported, minlength=classes) == 0
    limit = cluster.memory_limit
    allowed = supported[:, None] & (class_memory[:, None] <= limit[None, :])
    finite = np.isfinite(limit)
    memory_binds = bool(k and finite.any() and (class_memory.sum() > limit[finite].min()))
    mscale = (min(MEMORY_RESOLUTION / max(limit[finite].max(), 1e-300), MAX_UNITS / max(class_memory.sum(), 1e-300))
              if memory_binds else 1.0)
    identical = bool(k > 1 and np.all(limit == limit[0]) and np.all(speed == speed[0]))
    return LatencyData(
        graph=graph, cluster=cluster, q=int(q), scale=scale, cls=cls, classes=classes, allowed=allowed,
        cpu_time=floor(graph.cpu_time), acc_time=floor(acc), group_cost=floor(graph.group_cost),
        class_memory=np.ceil(class_memory * mscale).astype(np.int64),
        memory_cap=np.floor(np.where(finite, limit, 0) * mscale).astype(np.int64),
        memory_binds=memory_binds, head=head.astype(np.int64), tail=tail.astype(np.int64), lower_bound=lower,
        identical=identical,
    )


@dataclass
class LatencyModel:
    """The CP-SAT model and handles to its variables (``x[c][d]``: class c on accelerator d)."""

    data: LatencyData
    model: object
    x: list[list[object]]
    level: list[list[object]]
    y: dict[tuple[int, int], object]
    w: list[list[list[object]]]
    used: dict[tuple[int, int], object]
    comm_in: dict[tuple[int, int, int], object]
    comm_out: dict[tuple[int, int, int], object]
    start: list[list[object]]
    end: list[list[object]]
    finish: list[object]
    makespan: object
    path_work: list[object]
    crossing: dict[tuple[int, int], object]
    bound_slack: int = 0
    """Model units by which the model can overstate a latency (the one-unit block minimum)."""
    stats: dict[str, int] = field(default_factory=dict)
    prefix: dict[tuple[int, int], object] = field(default_factory=dict)
    """Symmetry rows' ``(c, d)``: 1 when accelerator ``d`` holds some class ``<= c``."""


def build_model(data: LatencyData, upper: int | None = None, symmetry: bool = True,
                path_rows: bool = True) -> LatencyModel:
    """Build the CP-SAT model (Fig. 3 for ``q=1``, Fig. 4 for ``q>=2``).

    ``upper``: a known model makespan (the warm start's); solutions above it are cut off.
    """
    from ortools.sat.python import cp_model

    graph, cluster, q = data.graph, data.cluster, data.q
    n, k = graph.n, cluster.accelerators
    cpus = cluster.cpus
    m = cp_model.CpModel()
    horizon = int(upper) if upper is not None else int(
        data.cpu_time.sum() + data.acc_time.max(axis=1, initial=0).sum() + 2 * data.group_cost.sum() + n * k * q + 1)
    cls = data.cls.tolist()
    src, dst = graph.src.tolist(), graph.dst.tolist()
    edge_group = graph.edge_group.tolist()
    group_cost = data.group_cost.tolist()

    # ---- Variables -------------------------------------------------------------------------
    # x[c][d]: class c runs on accelerator d (fixed to 0 where unsupported or too large).
    x = [[m.NewBoolVar(f"x{c}_{d}") if data.allowed[c, d] else m.NewConstant(0) for d in range(k)]
         for c in range(data.classes)]
    on_acc = [sum(x[c]) for c in range(data.classes)]
    # level[v][d]: the evaluator's piece counter of node v for accelerator d (0..q).
    level = [[m.NewIntVar(0, q, f"L{v}_{d}") for d in range(k)] for v in range(n)]
    # w[v][d][p]: node v is in piece p (0-based) of accelerator d; for q=1 this is x itself.
    if q == 1:
        w = [[[x[cls[v]][d]] for d in range(k)] for v in range(n)]
    else:
        w = [[[m.NewBoolVar(f"w{v}_{d}_{p}") for p in range(q)] for d in range(k)] for v in range(n)]
    # Times: finish of each node, start and end of each block (d, p), makespan.
    finish = [m.NewIntVar(min(int(data.head[v]), horizon), horizon, f"F{v}") for v in range(n)]
    start = [[m.NewIntVar(0, horizon, f"S{d}_{p}") for p in range(q)] for d in range(k)]
    end = [[m.NewIntVar(0, horizon, f"E{d}_{p}") for p in range(q)] for d in range(k)]
    low = int((data.head).max()) if n else 0
    makespan = m.NewIntVar(min(low, horizon), horizon, "T")

    # ---- Assignment: one device per class; no CPU means an accelerator is required ------------
    for c in range(data.classes):
        m.Add(on_acc[c] <= 1 if cpus else on_acc[c] == 1)

    # ---- Memory per accelerator (Fig. 3 (3)): sum of sizes <= cap ----------------------------
    # Only classes that fit alone: another's x is the constant 0, and its size (scaled for the
    # smallest cap, up to 2**50) would only hurt a MIP solver's numerics (HiGHS reads
    # coefficients from 1e15 on as infinite).
    if data.memory_binds:
        for d in range(k):
            fits = [c for c in range(data.classes) if data.allowed[c, d] and data.class_memory[c]]
            if fits:
                m.Add(sum(int(data.class_memory[c]) * x[c][d] for c in fits) <= int(data.memory_cap[d]))

    # ---- Pieces (Fig. 3 (6)-(8) / Lemma 4.1 contiguity; Fig. 4 subgraph order) -------------
    # level_v >= x_v;  level_v >= level_u;  level_v >= level_u + x_v - x_u  for each edge u -> v:
    # a path that leaves the set and re-enters it raises the level, so level <= q allows at most
    # q pieces (q = 1: contiguity, the paper's z variables).
    y: dict[tuple[int, int], object] = {}
    for v in range(n):
        for d in range(k):
            m.Add(level[v][d] >= x[cls[v]][d])
    for e in range(graph.m):
        u, v = src[e], dst[e]
        for d in range(k):
            m.Add(level[v][d] >= level[u][d])
            if cls[u] != cls[v]:
                m.Add(level[v][d] >= level[u][d] + x[cls[v]][d] - x[cls[u]][d])
    if q > 1:
        # Exactly the evaluator's rule: level_v = max(x_v, max_u level_u + [x_v and not x_u]),
        # and a member's piece is its level. Only lower bounds would let the model choose
        # later pieces than the evaluator runs, and report a latency it does not have.
        preds = graph.predecessors
        for v in range(n):
            for d in range(k):
                terms = [x[cls[v]][d]]
                for u in preds[v].tolist():
                    if cls[u] == cls[v]:
                        terms.append(level[u][d])
                    else:
                        yv = m.NewBoolVar(f"y{u}_{v}_{d}")
                        m.AddImplication(yv, x[cls[v]][d])
                        m.AddImplication(yv, x[cls[u]][d].Not())
                        m.AddBoolOr([x[cls[v]][d].Not(), x[cls[u]][d], yv])
                        y[(u, v, d)] = yv
                        terms.append(level[u][d] + yv)
                m.AddMaxEquality(level[v][d], terms)
                m.Add(sum(w[v][d]) == x[cls[v]][d])
                m.Add(level[v][d] == sum((p + 1) * w[v][d][p] for p in range(q))).OnlyEnforceIf(x[cls[v]][d])

    # ---- Communication (Fig. 3 (10), linearized): a group is copied into a block once if one
    # of its edges enters it, and out of its source's block once if one of its edges leaves it.
    comm_in: dict[tuple[int, int, int], object] = {}
    comm_out: dict[tuple[int, int, int], object] = {}
    for e in range(graph.m):
        u, v, g = src[e], dst[e], edge_group[e]
        if q == 1 and cls[u] == cls[v]:
            continue  # always the same block
        for d in range(k):
            if not (data.allowed[cls[u], d] or data.allowed[cls[v], d]):
                continue
            for p in range(q):
                if data.allowed[cls[v], d]:
                    key = (g, d, p)
                    if key not in comm_in:
                        comm_in[key] = m.NewBoolVar(f"in{g}_{d}_{p}")
                    m.AddBoolOr([w[v][d][p].Not(), w[u][d][p], comm_in[key]])
                if data.allowed[cls[u], d]:
                    key = (g, d, p)
                    if key not in comm_out:
                        comm_out[key] = m.NewBoolVar(f"out{g}_{d}_{p}")
                    m.AddBoolOr([w[u][d][p].Not(), w[v][d][p], comm_out[key]])

    # ---- Block duration: E = S + copy-in + compute + copy-out (Fig. 3 (10)-(11)) ------------
    # A non-empty block lasts at least one model unit when a zero-time block could exist, so
    # blocks that wait on each other in a cycle (the evaluator's deadlock) stay infeasible.
    zero_possible = bool((data.group_cost == 0).any())
    used: dict[tuple[int, int], object] = {}
    for d in range(k):
        members = [v for v in range(n) if data.allowed[cls[v], d]]
        for p in range(q):
            compute = sum(int(data.acc_time[v, d]) * w[v][d][p] for v in members if data.acc_time[v, d])
            copies = sum(group_cost[g] * var for (g, dd, pp), var in comm_in.items() if dd == d and pp == p
                         and group_cost[g]) + sum(group_cost[g] * var for (g, dd, pp), var in comm_out.items()
                                                  if dd == d and pp == p and group_cost[g])
            m.Add(end[d][p] >= start[d][p] + compute + copies)
            if zero_possible and members:
                used[(d, p)] = m.NewBoolVar(f"used{d}_{p}")
                for v in members:
                    m.AddImplication(w[v][d][p], used[(d, p)])
                m.Add(end[d][p] >= start[d][p] + used[(d, p)])
            # ---- Serial pieces on one accelerator (Fig. 4): piece p+1 after piece p.
            if p:
                m.Add(start[d][p] >= end[d][p - 1])
            m.Add(makespan >= end[d][p])

    # ---- Invocation: a block starts after every input from outside it (Fig. 3 (9)) ----------
    for e in range(graph.m):
        u, v = src[e], dst[e]
        if q == 1 and cls[u] == cls[v]:
            continue
        for d in range(k):
            if not data.allowed[cls[v], d]:
                continue
            for p in range(q):
                m.Add(start[d][p] >= finish[u]).OnlyEnforceIf([w[v][d][p], w[u][d][p].Not()])

    # ---- Finish times: a block's nodes finish at its end; a CPU node after its predecessors --
    for v in range(n):
        for d in range(k):
            if data.allowed[cls[v], d]:
                for p in range(q):
                    m.Add(finish[v] >= end[d][p]).OnlyEnforceIf(w[v][d][p])
        cpu_v = int(data.cpu_time[v])
        if cpus and cpu_v:
            m.Add(finish[v] >= cpu_v - cpu_v * on_acc[cls[v]])
    for e in range(graph.m):
        u, v = src[e], dst[e]
        cpu_v = int(data.cpu_time[v]) if cpus else 0
        # Valid for every placement: a node never finishes before a predecessor, and on the CPU
        # it finishes its own time later (no literal needed: on_cpu is linear in x).
        m.Add(finish[v] >= finish[u] + cpu_v - cpu_v * on_acc[cls[v]])

    # ---- Path work (valid inequalities for the LP): along any path the nodes compute one after
    # another and every block boundary it crosses is copied out and in once, so
    #   C_v >= C_u + work_v + cost(u->v) * sum_d |x_ud - x_vd|,   C_v >= work_v,   T >= C_v,
    # with work_v = cpu_v * on_cpu(v) + sum_d acc_vd * x_vd. Unlike the block rows these carry no
    # enforcement literal, so CP-SAT's LP relaxation sees that CPU nodes and boundaries cost time.
    path_work: list[object] = []
    if path_rows:
        crossing: dict[tuple[int, int], object] = {}
        work = []
        for v in range(n):
            c = cls[v]
            cpu_v = int(data.cpu_time[v]) if cpus else 0
            work.append(cpu_v - cpu_v * on_acc[c]
                        + sum(int(data.acc_time[v, d]) * x[c][d] for d in range(k) if data.allowed[c, d]))
        for v in range(n):
            path_work.append(m.NewIntVar(min(int(data.head[v]), horizon), horizon, f"C{v}"))
            m.Add(path_work[v] >= work[v])
            # Any path through v continues to a sink: at least its cheapest work after v.
            m.Add(makespan >= path_work[v] + int(data.tail[v]))
        for e in range(graph.m):
            u, v = src[e], dst[e]
            cost = group_cost[edge_group[e]]
            boundary = 0
            if cost and cls[u] != cls[v]:
                terms = []
                for d in range(k):
                    if not (data.allowed[cls[u], d] or data.allowed[cls[v], d]):
                        continue
                    t = m.NewBoolVar(f"X{e}_{d}")
                    m.Add(t >= x[cls[u]][d] - x[cls[v]][d])
                    m.Add(t >= x[cls[v]][d] - x[cls[u]][d])
                    crossing[(e, d)] = t
                    terms.append(t)
                boundary = cost * sum(terms)
            m.Add(path_work[v] >= path_work[u] + work[v] + boundary)

    # ---- Symmetry between identical accelerators -------------------------------------------
    # Order accelerators by the first class (in topological order) they hold: d may take class c
    # only if d-1 holds some class before c. Prefix sums keep this linear in size.
    holds_by: dict[tuple[int, int], object] = {}
    if symmetry and data.identical:
        for d in range(1, k):
            prefix = m.NewConstant(0)
            for c in range(data.classes):
                m.Add(x[c][d] <= prefix)
                nxt = m.NewIntVar(0, 1, f"P{c}_{d - 1}")
                m.AddMaxEquality(nxt, [prefix, x[c][d - 1]])
                holds_by[(c, d - 1)] = prefix = nxt

    # ---- A known lower bound: T >= lower_bound, less what rounding to units can take off ----
    # Every term is rounded down, and a critical chain sums at most n compute times and, per
    # block, each group's copy in and out: the model's makespan of a placement is at least its
    # true latency times scale minus that many units. Added only when it says more than the
    # critical path, which the path-work rows already give (an idle row would still change
    # CP-SAT's search).
    floor_units = math.floor(data.lower_bound * data.scale) - (n + 2 * k * q * len(group_cost) + 1)
    if floor_units > int((data.head + data.tail).max(initial=0)):
        m.Add(makespan >= floor_units)

    # ---- Objective: the makespan (latency) -------------------------------------------------
    for v in range(n):
        if not graph.successors[v].size:
            m.Add(makespan >= finish[v])
    m.Minimize(makespan)
    slack = len(used) if zero_possible else 0
    stats = {"variables": len(m.Proto().variables), "constraints": len(m.Proto().constraints)}
    return LatencyModel(data, m, x, level, y, w, used, comm_in, comm_out, start, end, finish, makespan,
                        path_work, crossing if path_rows else {}, bound_slack=slack, stats=stats, prefix=holds_by)


def decode(lm: LatencyModel, value) -> np.ndarray:
    """Device array of a solution: a class's accelerator, else the first CPU (all CPUs are alike).

    ``value``: a callable returning a variable's value (``solver.Value``).
    """
    data = lm.data
    k = data.cluster.accelerators
    class_device = np.full(data.classes, k, dtype=np.int64)
    for c in range(data.classes):
        for d in range(k):
            if value(lm.x[c][d]):
                class_device[c] = d
    return class_device[data.cls]


def canonical_devices(data: LatencyData, device: np.ndarray) -> np.ndarray:
    """Relabel identical accelerators by their first class, as the symmetry rows require; CPUs to cpu0."""
    k = data.cluster.accelerators
    dev = np.where(device >= k, k, device).astype(np.int64)
    if not data.identical:
        return dev
    first = {}
    for c in range(data.classes):
        members = dev[data.cls == c]
        d = int(members[0])
        if d < k:
            first.setdefault(d, c)
    order = sorted(first, key=first.get)
    relabel = np.arange(k + 1)
    for new, old in enumerate(order):
        relabel[old] = new
    return relabel[dev]


def hint_values(lm: LatencyModel, device: np.ndarray) -> dict | None:
    """A complete model solution for a placement (the CP-SAT hint), or None if outside the model.

    Times are the evaluator's schedule recomputed in the model's integer units.
    """
    data = lm.data
    graph, k, q = data.graph, data.cluster.accelerators, data.q
    given = np.where(np.asarray(device) >= k, k, np.asarray(device))  # all CPUs alike
    first = np.zeros(data.classes, dtype=np.int64)
    first[data.cls[::-1]] = given[::-1]  # each class's device at its first member
    if np.any(given != first[data.cls]):
        return None  # a colour class split over devices (before relabelling, which would merge them)
    dev = canonical_devices(data, device)
    n = graph.n
    values: dict = {}
    level = np.zeros((n, k), dtype=np.int64)
    for d in range(k):
        member = dev == d
        if member.any() and not data.allowed[data.cls[member], d].all():
            return None
        level[:, d] = piece_levels(graph, member)
        if level[member, d].max(initial=0) > q:
            return None
    if data.memory_binds:
        for d in range(k):
            if data.class_memory[np.unique(data.cls[dev == d])].sum() > data.memory_cap[d]:
                return None
    class_device = [int(dev[data.cls == c][0]) for c in range(data.classes)]
    for c, d in enumerate(class_device):
        for dd in range(k):
            values[lm.x[c][dd]] = int(d == dd)
    for (c, d), var in lm.prefix.items():
        values[var] = int(d in class_device[: c + 1])
    piece = np.where(dev < k, level[np.arange(n), np.minimum(dev, max(k - 1, 0))] - 1, -1) if k else np.full(n, -1)
    for v in range(n):
        for d in range(k):
            values[lm.level[v][d]] = int(level[v, d])
            if q > 1:
                for p in range(q):
                    values[lm.w[v][d][p]] = int(dev[v] == d and piece[v] == p)
    for (u, v, d), var in lm.y.items():
        values[var] = int(dev[v] == d and dev[u] != d)
    block = np.where(dev < k, dev * q + np.maximum(piece, 0), -1)

    def in_block(v: int, d: int, p: int) -> bool:
        return bool(dev[v] == d and piece[v] == p)

    for (g, d, p), var in lm.comm_in.items():
        edges = np.flatnonzero(graph.edge_group == g)
        values[var] = int(any(in_block(int(graph.dst[e]), d, p) and not in_block(int(graph.src[e]), d, p)
                              for e in edges))
    for (g, d, p), var in lm.comm_out.items():
        edges = np.flatnonzero(graph.edge_group == g)
        values[var] = int(any(in_block(int(graph.src[e]), d, p) and not in_block(int(graph.dst[e]), d, p)
                              for e in edges))
    # Block durations in model units, then the earliest schedule (blocks in a topological order).
    duration = np.zeros(k * q, dtype=np.int64)
    nonempty = np.zeros(k * q, dtype=bool)
    for v in range(n):
        if block[v] >= 0:
            duration[block[v]] += data.acc_time[v, dev[v]]
            nonempty[block[v]] = True
    for (g, d, p), var in [*lm.comm_in.items(), *lm.comm_out.items()]:
        duration[d * q + p] += data.group_cost[g] * values[var]
    for (d, p), var in lm.used.items():
        values[var] = int(nonempty[d * q + p])
        duration[d * q + p] = max(duration[d * q + p], int(nonempty[d * q + p]))
    import networkx as nx

    order_graph = nx.DiGraph()
    key = [("b", int(block[v])) if block[v] >= 0 else ("v", v) for v in range(n)]
    order_graph.add_nodes_from(set(key))
    order_graph.add_nodes_from(("b", b) for b in range(k * q))
    for u, v in zip(graph.src.tolist(), graph.dst.tolist()):
        if key[u] != key[v]:
            order_graph.add_edge(key[u], key[v])
    for d in range(k):
        for p in range(1, q):
            order_graph.add_edge(("b", d * q + p - 1), ("b", d * q + p))
    try:
        order = list(nx.topological_sort(order_graph))
    except nx.NetworkXUnfeasible:
        return None
    ready: dict = dict.fromkeys(order_graph.nodes, 0)
    finish_of: dict = {}
    for node in order:
        kind, ident = node
        t = ready[node]
        if kind == "b":
            d, p = divmod(ident, q)
            values[lm.start[d][p]] = int(t)
            values[lm.end[d][p]] = int(t + duration[ident])
            fin = t + duration[ident]
        else:
            fin = t + (data.cpu_time[ident] if data.cluster.cpus else 0)
        finish_of[node] = fin
        for nxt in order_graph.successors(node):
            ready[nxt] = max(ready[nxt], fin)
    finish = np.array([finish_of[key[v]] for v in range(n)], dtype=np.int64)
    for v in range(n):
        values[lm.finish[v]] = int(finish[v])
    if lm.path_work:
        on = dev < k
        for (e, d), var in lm.crossing.items():
            values[var] = int((dev[graph.src[e]] == d) != (dev[graph.dst[e]] == d))
        work = np.where(on, data.acc_time[np.arange(n), np.minimum(dev, max(k - 1, 0))] if k else 0,
                        data.cpu_time if data.cluster.cpus else 0)
        cumulative = work.astype(np.int64).copy()
        preds = graph.predecessors
        edge_of = {(int(a), int(b)): e for e, (a, b) in enumerate(zip(graph.src, graph.dst))}
        for v in graph.topological_order.tolist():
            for u in preds[v].tolist():
                e = edge_of[(u, v)]
                boundary = sum(values[var] for (ee, _), var in lm.crossing.items() if ee == e)
                cost = int(data.group_cost[graph.edge_group[e]]) if data.cls[u] != data.cls[v] else 0
                cumulative[v] = max(cumulative[v], cumulative[u] + work[v] + cost * boundary)
        for v in range(n):
            values[lm.path_work[v]] = int(cumulative[v])
    blocks_end = [values[lm.end[d][p]] for d in range(k) for p in range(q)]
    values[lm.makespan] = int(max([finish.max(initial=0), *blocks_end,
                                   *(values[c] + int(data.tail[v]) for v, c in enumerate(lm.path_work))]))
    return values


# ---- The same program for MIP solvers -----------------------------------------------------------
class LatencyMIPForm:
    """The CP-SAT model above, translated row by row into the solver-neutral :class:`Model`.

    The program is written once (CP-SAT's modelling calls are its notation); MIP solvers get it
    through this translation:

    * times (block starts and ends, finishes, path work, makespan) become continuous
      variables in the instance's own time unit (model units / ``scale``); a row holding one
      is divided by ``scale``;
    * a row with one enforcement literal becomes an indicator row whose big-M constants come
      from the variables' domains, i.e. from the per-node windows ``[head_v, UB]`` and the
      warm start's ``UB``, never from one global sum; a row with two literals (a block waits
      for a predecessor outside it) gets an auxiliary binary ``z >= l1 + l2 - 1``;
    * clauses become ``sum of literals >= 1``; ``max`` equalities (the exact piece rule for
      ``q >= 2``, the symmetry prefix) become ``t >= e_i`` plus ``t <= e_i + M_i (1 - s_i)``
      with one selector ``s_i`` per argument, ``sum s_i = 1``.

    ``encode`` / ``decode`` go between device arrays and this model's values, as
    :func:`exactplace.backends.mip.solve_ip` expects.
    """

    def __init__(self, lm: LatencyModel) -> None:
        from .model import Kind, Model

        self.lm = lm
        proto = lm.model.Proto()
        scale = lm.data.scale
        time_vars = {v.Index() for v in [*[s for row in lm.start for s in row], *[e for row in lm.end for e in row],
                                          *lm.finish, lm.makespan, *lm.path_work]}
        nv = len(proto.variables)
        lo = np.array([proto.variables[i].domain[0] for i in range(nv)], dtype=np.float64)
        hi = np.array([proto.variables[i].domain[len(proto.variables[i].domain) - 1] for i in range(nv)],
                      dtype=np.float64)
        is_time = np.zeros(nv, dtype=bool)
        is_time[list(time_vars)] = True
        unit = np.where(is_time, 1.0 / scale, 1.0)  # model value of a variable = proto value * unit
        model = Model("latency")
        # One proto variable -> one model variable, same index order (runs of one kind at a time).
        cuts = np.flatnonzero(np.diff(is_time.astype(np.int8))) + 1
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), nv]):
            model.add_vars(b - a, lb=lo[a:b] * unit[a:b], ub=hi[a:b] * unit[a:b],
                           kind=Kind.CONTINUOUS if is_time[a] else Kind.INTEGER, name="proto")
        base = np.arange(nv, dtype=np.int64)
        mlo, mhi = lo * unit, hi * unit
        self.base, self.unit, self.scale = base, unit, scale
        self.fixed, self.fixed_value = lo == hi, lo  # constants (NewConstant), in proto units
        self.extra: list[tuple[str, object]] = []  # how to compute each auxiliary variable's value

        def literal(lit: int) -> tuple[int, int]:  # (variable, value making the literal true)
            return (lit, 1) if lit >= 0 else (-lit - 1, 0)

        def activity(cols: list[int], coefs: list[float]) -> tuple[float, float]:
            """Range of sum(coef * model value) over the variables' bounds."""
            low = sum(c * (mlo[i] if c > 0 else mhi[i]) for i, c in zip(cols, coefs))
            high = sum(c * (mhi[i] if c > 0 else mlo[i]) for i, c in zip(cols, coefs))
            return low, high

        def aux(name: str, recipe: object) -> int:
            index = nv + len(self.extra)  # auxiliary binaries follow the proto's variables
            self.extra.append((index, recipe))
            return index

        # Rows are buffered per family and added in one call each (the model is built in bulk).
        plain: dict[str, list] = {}
        enforced: dict[str, list] = {}

        def add_row(family: str, cols: object, vals: object, lb: float = -math.inf, ub: float = math.inf) -> None:
            plain.setdefault(family, []).append((list(cols), list(vals), lb, ub))

        def add_indicator(family: str, binary: int, value: int, cols: object, vals: object, lb: float = -math.inf,
                          ub: float = math.inf, big_m_lb: float = 0.0, big_m_ub: float = 0.0) -> None:
            enforced.setdefault(family, []).append((binary, value, list(cols), list(vals), lb, ub, big_m_lb, big_m_ub))

        for ct in proto.constraints:
            enforcement = list(ct.enforcement_literal)
            if ct.has_linear():
                cols = list(ct.linear.vars)
                raw = list(ct.linear.coeffs)
                timed = any(is_time[i] for i in cols)
                # Coefficients on model values: proto_coef / unit_i, then the row divided by scale if timed.
                row_scale = 1.0 / scale if timed else 1.0
                coefs = [c / unit[i] * row_scale for i, c in zip(cols, raw)]
                dom = list(ct.linear.domain)
                lb = dom[0] * row_scale if dom[0] > -2**62 else -math.inf
                ub = dom[-1] * row_scale if dom[-1] < 2**62 else math.inf
                if not enforcement:
                    add_row("row", base[cols], coefs, lb, ub)
                    continue
                if len(enforcement) == 1:
                    var, value = literal(enforcement[0])
                    binary = int(base[var])
                else:
                    parts = [literal(lit) for lit in enforcement]
                    binary = aux("both", parts)
                    # z >= sum(literal) - (len - 1)
                    lits_cols = [binary] + [int(base[v]) for v, _ in parts]
                    vals = [1.0] + [-1.0 if val else 1.0 for _, val in parts]
                    negatives = sum(1 for _, val in parts if not val)
                    add_row("both literals", lits_cols, vals, lb=negatives - (len(parts) - 1))
                    value = 1
                low, high = activity(cols, coefs)
                add_indicator("enforced", binary, value, base[cols], coefs, lb, ub,
                              max(0.0, lb - low) if math.isfinite(lb) else 0.0,
                              max(0.0, high - ub) if math.isfinite(ub) else 0.0)
            elif ct.has_bool_or():
                parts = [literal(lit) for lit in ct.bool_or.literals] + [
                    (v, 1 - val) for v, val in (literal(lit) for lit in enforcement)]
                vals = [1.0 if val else -1.0 for _, val in parts]
                negatives = sum(1 for _, val in parts if not val)
                add_row("clause", [int(base[v]) for v, _ in parts], vals, lb=1 - negatives)
            elif ct.has_bool_and():
                (enf, enf_val), = [literal(lit) for lit in enforcement]
                for lit in ct.bool_and.literals:
                    v, val = literal(lit)
                    # enforcement true -> literal true:  lit >= enf
                    lit_coef, lit_const = (1.0, 0.0) if val else (-1.0, 1.0)
                    enf_coef, enf_const = (1.0, 0.0) if enf_val else (-1.0, 1.0)
                    add_row("implication", [int(base[v]), int(base[enf])], [lit_coef, -enf_coef],
                            lb=enf_const - lit_const)
            elif ct.has_lin_max():
                group = len(self.extra)
                target = ct.lin_max.target
                t_cols, t_coefs = list(target.vars), list(target.coeffs)
                exprs = [(list(e.vars), list(e.coeffs), e.offset) for e in ct.lin_max.exprs]
                selectors = []
                for cols, coefs, offset in exprs:
                    # target - expr >= 0 (integer variables only: units are 1)
                    add_row("max >=", [int(base[i]) for i in t_cols + cols], t_coefs + [-c for c in coefs],
                            lb=offset - target.offset)
                    s = aux("select", (group, t_cols, t_coefs, target.offset, cols, coefs, offset))
                    selectors.append(s)
                    _, high_t = activity(t_cols, t_coefs)
                    low_e, _ = activity(cols, coefs)
                    big = high_t + target.offset - (low_e + offset)
                    add_indicator("max <=", s, 1, [int(base[i]) for i in t_cols + cols],
                                  t_coefs + [-c for c in coefs], ub=offset - target.offset, big_m_ub=max(0.0, big))
                add_row("one selector", selectors, [1.0] * len(selectors), 1.0, 1.0)
            else:
                raise NotImplementedError("the latency model uses only linear, clause, implication and max rows")
        if self.extra:
            model.add_vars(len(self.extra), lb=0, ub=1, kind=Kind.INTEGER, name="auxiliary")
        for family, rows in plain.items():
            sizes = [len(r[0]) for r in rows]
            model.add_rows(family, len(rows), rows=np.repeat(np.arange(len(rows)), sizes),
                           cols=np.concatenate([np.asarray(r[0], dtype=np.int64) for r in rows]),
                           vals=np.concatenate([np.asarray(r[1], dtype=np.float64) for r in rows]),
                           lb=[r[2] for r in rows], ub=[r[3] for r in rows])
        for family, rows in enforced.items():
            sizes = [len(r[2]) for r in rows]
            model.add_indicators(family, len(rows), binary=[r[0] for r in rows], value=[r[1] for r in rows],
                                 rows=np.repeat(np.arange(len(rows)), sizes),
                                 cols=np.concatenate([np.asarray(r[2], dtype=np.int64) for r in rows]),
                                 vals=np.concatenate([np.asarray(r[3], dtype=np.float64) for r in rows]),
                                 lb=[r[4] for r in rows], ub=[r[5] for r in rows],
                                 big_m_lb=[r[6] for r in rows], big_m_ub=[r[7] for r in rows])
        model.minimize([int(base[lm.makespan.Index()])], [1.0])
        self.model = model

    def decode(self, values: np.ndarray) -> np.ndarray:
        """Device array of a solution's values."""
        base = self.base
        return decode(self.lm, lambda var: values[base[var.Index()]] > 0.5)

    def encode(self, device: np.ndarray) -> np.ndarray | None:
        """This model's values for a placement (the warm start), or None outside the program's space."""
        hint = hint_values(self.lm, device)
        if hint is None:
            return None
        # Variables the hint leaves out are fixed ones (constants): their only value.
        proto_values = np.where(self.fixed, self.fixed_value, 0.0)
        for var, value in hint.items():
            proto_values[var.Index()] = value
        values = np.full(self.model.num_vars, np.nan)
        values[self.base] = proto_values * self.unit
        chosen: set[int] = set()
        for index, recipe in self.extra:
            if isinstance(recipe, list):  # conjunction of literals
                values[index] = float(all((proto_values[v] > 0.5) == bool(val) for v, val in recipe))
            else:  # selector of a max argument: the first argument attaining the target
                group, t_cols, t_coefs, t_off, cols, coefs, off = recipe
                target = sum(c * proto_values[i] for i, c in zip(t_cols, t_coefs)) + t_off
                expr = sum(c * proto_values[i] for i, c in zip(cols, coefs)) + off
                take = abs(target - expr) < 0.5 and group not in chosen
                if take:
                    chosen.add(group)
                values[index] = float(take)
        return values
