"""The latency program (paper §4): Fig. 3 with ``q=1``, Fig. 4 with ``q`` subgraphs per accelerator.

It minimizes the latency of one sample under the evaluator's rules
(:mod:`exactplace.evaluators.latency`) over its space (``Space.SUBGRAPHS``): any cut of each
accelerator's nodes into at most ``q`` contiguous subgraphs run in any order the data flow allows,
memory per accelerator, colour classes on one device, CPU nodes anywhere. The solver chooses the
subgraphs (the evaluator's default cut is one choice among them).

Reading order: :func:`prepare` (the data in model units: times and memory as integers),
:func:`latency_ip` (variables, one block per constraint family with the paper's equation,
objective), then :class:`LatencyIP`'s ``decode`` (values -> devices and subgraphs) and ``encode``
(a placement -> a complete solution, the warm start).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import DeviceRules
from exactplace.core.errors import PlacementError, check_param
from exactplace.core.graph import Graph
from exactplace.evaluators.latency import invocation_blocks

from .model import Kind, Model
from .units import stage_rows

__all__ = ["DEFAULT_LATENCY", "LatencyData", "LatencyIP", "LatencySettings", "latency_ip", "prepare"]


@dataclass(frozen=True)
class LatencySettings:
    """How :func:`prepare` turns times and memory into the model's integers."""

    time_resolution: int = 2**26
    """The latency is about this many model units: rounding costs at most ``n`` units of it."""
    finest_time_log2: int = 40
    """At most ``2**finest_time_log2`` units per time unit: latencies far below one are noise, and CP-SAT's
    integers are 64-bit."""
    memory_resolution: int = 2**40
    """The largest accelerator memory is this many units (sizes rounded up, caps down)."""


DEFAULT_LATENCY = LatencySettings()


@dataclass(frozen=True)
class LatencyData:
    """What the model needs, in model units (integers): times ``* scale`` rounded down, memory rounded safe.

    ``cls``: each node's colour class, numbered by its first node in topological order;
    ``allowed[c, d]``: class ``c`` may run on accelerator ``d`` (supported, fits alone, allowed by the
    device rules); ``no_cpu[c]``: the device rules keep class ``c`` off the CPU cores;
    ``head`` / ``tail``: the heaviest path into a node (inclusive) / out of it (exclusive) at the
    cheapest devices without communication; ``low`` / ``high``: the window of the makespan.
    """

    graph: Graph
    cluster: Cluster
    q: int
    scale: float
    cls: np.ndarray
    allowed: np.ndarray
    cpu: np.ndarray
    acc: np.ndarray
    cost: np.ndarray
    memory: np.ndarray
    cap: np.ndarray
    head: np.ndarray
    tail: np.ndarray
    low: int
    high: int
    identical: bool
    unit_blocks: bool
    no_cpu: np.ndarray
    max_stages: int | None

    @property
    def classes(self) -> int:
        return len(self.memory)


def _heaviest(graph: Graph, weight: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Heaviest path ending at each node (starting at it if ``reverse``), the node included."""
    total = weight.astype(np.int64).copy()
    neighbours = graph.successors if reverse else graph.predecessors
    order = graph.topological_order.tolist()
    for v in reversed(order) if reverse else order:
        if len(neighbours[v]):
            total[v] += total[neighbours[v]].max()
    return total


def prepare(graph: Graph, cluster: Cluster, q: int = 1, upper: float | None = None,
            lower: float | None = None, settings: LatencySettings = DEFAULT_LATENCY,
            rules: DeviceRules | None = None) -> LatencyData:
    """The model's data. ``upper``: a known latency (the warm start's) bounding every time window;
    ``lower``: a known lower bound on the latency over the space (the path bound, ``q=1``);
    ``rules``: a user's device rules (pins to one device, forbidden devices, ``max_stages``; not ones
    that tell CPU cores apart, which all run alike here).

    Time is discretized: every duration is rounded *down* to a multiple of ``1/scale`` (a power of
    two, about ``1 / settings.time_resolution`` of the latency), so the model never overstates a
    placement's latency and its solutions' times are exact in every solver (CP-SAT's integer scaling
    included). Memory is integral too: sizes rounded up and caps down at ``settings.memory_resolution``
    units, so the model never returns a placement the referee rejects.
    """
    n, k = graph.n, cluster.accelerators
    position = np.empty(n, dtype=np.int64)
    position[graph.topological_order] = np.arange(n)
    first = np.full(int(graph.color.max()) + 1, n, dtype=np.int64)
    np.minimum.at(first, graph.color, position)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    cls = rank[graph.color]
    speed = np.asarray(cluster.speed, dtype=np.float64)
    acc = np.where(graph.supported[:, None], graph.acc_time[:, None] / speed[None, :], np.inf)
    total = float(graph.cpu_time.sum() + np.where(np.isfinite(acc), acc, 0).max(axis=1, initial=0).sum()
                  + 2 * graph.group_cost.sum())
    reference = upper if upper is not None and math.isfinite(upper) and upper > 0 else max(total, 1e-300)
    scale = 2.0 ** min(settings.finest_time_log2, math.floor(math.log2(settings.time_resolution / reference)))

    def units(values: np.ndarray) -> np.ndarray:
        return np.floor(np.where(np.isfinite(values), values, 0.0) * scale + 1e-9).astype(np.int64)

    cpu_units = units(graph.cpu_time) if cluster.cpus else np.zeros(n, dtype=np.int64)
    acc_units = units(acc)
    cheapest = np.minimum(np.where(cluster.cpus, cpu_units, np.iinfo(np.int64).max),
                          np.where(np.isfinite(acc), acc_units, np.iinfo(np.int64).max).min(axis=1, initial=2**62))
    head = _heaviest(graph, cheapest)
    tail = _heaviest(graph, cheapest, reverse=True) - cheapest
    class_memory = np.bincount(cls, weights=graph.memory, minlength=len(first))
    supported = np.bincount(cls, weights=~graph.supported, minlength=len(first)) == 0
    limit = cluster.memory_limit
    allowed = supported[:, None] & (class_memory[:, None] <= limit[None, :])
    no_cpu = np.zeros(len(first), dtype=bool)
    if rules is not None and rules.allowed is not None:
        if rules.tells_cpus_apart(k):
            raise ValueError("prepare: the latency program runs every CPU core alike; rules that tell them apart "
                             "are not held")
        ruled = rules.unit_allowed(cls, len(first))
        allowed &= ruled[:, :k]
        no_cpu = ~ruled[:, k] if cluster.cpus else no_cpu
    split = rules is not None and len(rules.refine([np.arange(k)])) > 1
    finite = np.isfinite(limit)
    mscale = 2.0 ** math.floor(math.log2(settings.memory_resolution / max(limit[finite].max(initial=1.0), 1e-300)))
    cap = np.where(finite, np.floor(np.where(finite, limit, 0) * mscale), -1).astype(np.int64)  # -1: no cap
    blocks = k * q
    low = max(int(head.max(initial=0)), math.floor(lower * scale) if lower is not None else 0)
    high = (math.ceil(upper * scale) if upper is not None and math.isfinite(upper)
            else int(cpu_units.sum() + acc_units.max(axis=1, initial=0).sum() + 2 * units(graph.group_cost).sum()))
    return LatencyData(
        graph=graph, cluster=cluster, q=int(q), scale=scale, cls=cls, allowed=allowed, cpu=cpu_units, acc=acc_units,
        cost=units(graph.group_cost), memory=np.ceil(class_memory * mscale).astype(np.int64), cap=cap,
        head=head, tail=tail, low=low, high=max(high + blocks + 1, low),
        identical=bool(k > 1 and np.all(limit == limit[0]) and np.all(speed == speed[0])) and not split,
        unit_blocks=bool(q > 1 or np.any(allowed[cls] & (acc_units == 0))),
        no_cpu=no_cpu, max_stages=None if rules is None else rules.max_stages,
    )


@dataclass
class LatencyIP:
    """A built latency program: the model, its variable indices, and the way between values and placements."""

    model: Model
    data: LatencyData
    index: dict[str, np.ndarray]
    bound_slack: float
    """Time the model may overstate a latency by (the one-unit block minimum): subtract it from a bound."""

    def decode(self, values: np.ndarray) -> np.ndarray:
        """Device of every node: its class's accelerator, else the first CPU (all CPUs are alike)."""
        data = self.data
        x = values[self.index["x"]] > 0.5
        k = data.cluster.accelerators
        class_device = np.where(x.any(axis=1), np.argmax(x, axis=1), k) if k else np.zeros(data.classes, np.int64)
        return class_device.astype(np.int64)[data.cls]

    def decode_subgraph(self, values: np.ndarray) -> np.ndarray | None:
        """Each accelerator node's subgraph index (its run order), -1 on a CPU; None for ``q=1``."""
        if self.data.q == 1:
            return None
        device = self.decode(values)
        on = device < self.data.cluster.accelerators
        w = values[self.index["w"]] > 0.5
        return np.where(on, np.argmax(w[np.arange(len(device)), np.minimum(device, w.shape[1] - 1)], axis=1), -1)

    def encode(self, device: np.ndarray, subgraph: np.ndarray | None = None) -> np.ndarray | None:
        """A complete solution for a placement (subgraphs: the given ones, else the evaluator's cut),
        with the earliest schedule in model units; None when it lies outside the program."""
        return _encode(self, np.asarray(device, dtype=np.int64), subgraph)


def latency_ip(graph: Graph, cluster: Cluster, q: int = 1, upper: float | None = None, lower: float | None = None,
               *, symmetry: bool = True, path_rows: bool = True,
               settings: LatencySettings = DEFAULT_LATENCY, rules: DeviceRules | None = None) -> LatencyIP:
    """Build the program; ``upper``/``lower``/``settings``/``rules``: see :func:`prepare`.

    Accelerator ``d`` runs its subgraphs ``b = (d, 0), ..., (d, q-1)`` one after another; a subgraph is
    invoked once every input from outside it is in RAM, copies each entering communication group in
    once, computes its nodes, copies each leaving group out once, and all its nodes finish together;
    a CPU node runs as soon as its predecessors are done. With classes ``c``, nodes ``v``, groups ``g``::

        min  T
        s.t. sum_d x[c, d] <= 1  (= 1 without CPU cores)           assignment (Fig. 3 (1))
             sum_p w[v, d, p] = x[cls(v), d]                        one subgraph (Fig. 4; q > 1)
             sum_c mem_c x[c, d] <= cap_d                            memory (Fig. 3 (3))
             z_v >= z_u,  z_v >= w_u - w_v  (u -> v),  z_v + w_v <= 1   contiguity (Lemma 4.1)
             in[g, b] >= w[v, b] - w[u, b],  out[g, b] >= w[u, b] - w[v, b]   copies (Fig. 3 (10))
             E_b >= S_b + sum_g cost_g (in[g, b] + out[g, b]) + sum_v acc_v w[v, b]   duration (Fig. 3 (11))
             S_(d,p) >= E_(d,p-1)                                    serial subgraphs (Fig. 4)
             S_b >= F_src(g)  if in[g, b] = 1                        invocation (Fig. 3 (9))
             F_v >= E_b  if w[v, b] = 1;  F_v >= F_u + cpu_v (1 - sum_d x[v, d])   finish times
             T >= F_sink,  T >= E_b                                  latency

    A block lasts at least one time unit when used (``used[b]``), so that blocks cannot wait on each
    other in a cycle at zero cost; the result's ``bound_slack`` (one unit per block) keeps bounds valid.
    Valid inequalities: the path-work rows (``path_rows``) and, on identical accelerators, the symmetry
    rows (``symmetry``); ``False`` leaves them out, for measurements. Device rules: ``x[c, d] = 0`` where
    they forbid ``d``, ``sum_d x[c, d] = 1`` where they forbid the CPU cores, and ``max_stages`` as
    binary ``z[d] >= x[c, d]`` with ``sum_d z[d] <= max_stages``. The cluster has an accelerator
    (without one the only placement puts every node on a CPU: no program is needed).

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> from exactplace.solvers import solve_model
    >>> g = Graph([Node(1, 10.0, 4.0), Node(2, 10.0, 1.0, comm=1.0), Node(3, 5.0, None)], [(2, 3)])
    >>> ip = latency_ip(g, Cluster(1, cpus=8), q=2)
    >>> values = solve_model(ip.model, "highs").values
    >>> ip.decode(values).tolist(), ip.decode_subgraph(values).tolist()  # node 2 first: node 3 starts at 2
    ([0, 0, 1], [1, 0, -1])
    """
    check_param(cluster.accelerators > 0, "cluster", "latency_ip", "a cluster with an accelerator", cluster)
    data = prepare(graph, cluster, q, upper, lower, settings, rules)
    n, k, C, G = graph.n, cluster.accelerators, data.classes, len(data.cost)
    cls, src, dst, group = data.cls, graph.src, graph.dst, graph.edge_group
    unit, H = 1.0 / data.scale, data.high / data.scale  # H: the horizon, also every big-M of the indicators
    cpu = data.cpu / data.scale
    acc = np.where(data.allowed[cls], data.acc, 0) / data.scale  # (n, k)
    cost = data.cost / data.scale
    m = Model(f"latency, q={q}")

    # ---- Variables -------------------------------------------------------------------------------
    x = m.add_vars((C, k), ub=data.allowed.astype(float).reshape(-1), kind=Kind.INTEGER, name="x: class on acc d")
    if q == 1:
        w = x[cls][:, :, None]  # one block per accelerator: node v is in it when its class is
    else:
        w = m.add_vars((n, k, q), ub=np.repeat(data.allowed[cls].astype(float), q), kind=Kind.INTEGER,
                       name="w: node in subgraph (d, p)")
    z = m.add_vars((n, k, q), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="z: after leaving subgraph (d, p)")
    cin = m.add_vars((G, k, q), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="in: group copied into (d, p)")
    cout = m.add_vars((G, k, q), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="out: group copied out of (d, p)")
    used = m.add_vars((k, q), ub=1.0, kind=Kind.INTEGER, name="used: (d, p) not empty") if data.unit_blocks else None
    start = m.add_vars((k, q), ub=H, name="S: start of (d, p)")
    end = m.add_vars((k, q), ub=H, name="E: end of (d, p)")
    finish = m.add_vars(n, lb=data.head / data.scale, ub=H, name="F: finish of v")
    T = m.add_vars(1, lb=data.low / data.scale, ub=H, name="T: latency")[0]
    index = {"x": x, "w": w, "z": z, "in": cin, "out": cout, "S": start, "E": end, "F": finish, "T": np.array(T)}
    if used is not None:
        index["used"] = used
    if path_rows:  # C_v: the path work up to v; X[e, d]: the costly edge e crosses accelerator d's boundary
        costly = np.flatnonzero((cost[group] > 0) & (cls[src] != cls[dst]))
        index["C"] = m.add_vars(n, lb=data.head / data.scale, ub=H, name="C: path work to v")
        index["X"] = m.add_vars((len(costly), k), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="X: edge crosses acc d")
        index["costly"] = costly
    if symmetry and data.identical:  # P[c, d]: accelerator d holds a class <= c
        index["P"] = m.add_vars((C, k - 1), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="P: acc d holds a class <= c")
    on_acc = x[cls]  # (n, k): the node's accelerator indicators

    # ---- Assignment (Fig. 3 (1)): each class on at most one accelerator, else a CPU ---------------
    m.add_terms("assignment", (x, 1.0), lb=np.where(data.no_cpu | (cluster.cpus == 0), 1.0, 0.0), ub=1.0)
    if q > 1:  # (Fig. 4) a node on accelerator d is in exactly one of its subgraphs
        m.add_terms("one subgraph", (w.reshape(n * k, q), 1.0), (on_acc.reshape(-1, 1), -1.0), lb=0.0, ub=0.0)

    # ---- Memory per accelerator (Fig. 3 (3)) --------------------------------------------------------
    binds = [d for d in range(k) if data.cap[d] >= 0 and data.memory[data.allowed[:, d]].sum() > data.cap[d]]
    m.add_terms("memory", (x[:, binds].T, data.memory[None, :]), ub=data.cap[binds].astype(float))

    # ---- Contiguity of every subgraph (Lemma 4.1): z marks what a path reaches after leaving it ---
    #   z_v >= z_u,  z_v >= w_u - w_v  (u -> v),  z_v + w_v <= 1: no path leaves a subgraph and returns.
    zs, zd = z[src].reshape(-1), z[dst].reshape(-1)
    ws, wd = w[src].reshape(-1), w[dst].reshape(-1)
    m.add_terms("contiguity: z_v >= z_u", (zd, 1.0), (zs, -1.0), lb=0.0)
    m.add_terms("contiguity: z_v >= w_u - w_v", (zd, 1.0), (ws, -1.0), (wd, 1.0), lb=0.0)
    m.add_terms("contiguity: z_v + w_v <= 1", (z.reshape(-1), 1.0), (w.reshape(-1), 1.0), ub=1.0)

    # ---- Communication (Fig. 3 (10)): a group is copied into a subgraph once if an edge enters it, ---
    #      and out of its source's subgraph once if an edge leaves it.
    m.add_terms("copy in: in_g >= w_v - w_u", (cin[group].reshape(-1), 1.0), (wd, -1.0), (ws, 1.0), lb=0.0)
    m.add_terms("copy out: out_g >= w_u - w_v", (cout[group].reshape(-1), 1.0), (ws, -1.0), (wd, 1.0), lb=0.0)

    # ---- Duration (Fig. 3 (11)): E >= S + copies in + compute + copies out (+ one unit if used) ----
    blocks = np.arange(k * q)
    m.add_terms("duration", (end.reshape(-1), 1.0), (start.reshape(-1), -1.0),
                (w.transpose(1, 2, 0).reshape(k * q, n), -np.repeat(acc.T, q, axis=0)),
                (cin.transpose(1, 2, 0).reshape(k * q, G), -cost[None, :]),
                (cout.transpose(1, 2, 0).reshape(k * q, G), -cost[None, :]), lb=0.0)
    if used is not None:
        m.add_terms("duration: at least one unit when used", (end.reshape(-1), 1.0), (start.reshape(-1), -1.0),
                    (used.reshape(-1), -unit), lb=0.0)
        m.add_terms("used >= w", (np.repeat(used.reshape(1, -1), n, 0).reshape(-1), 1.0), (w.reshape(-1), -1.0), lb=0.0)
        if q > 1:  # subgraphs fill in order: (d, p+1) used only if (d, p) is (no gaps to permute)
            m.add_terms("used in order", (used[:, :-1].reshape(-1), 1.0), (used[:, 1:].reshape(-1), -1.0), lb=0.0)
            m.add_terms("used only if not empty", (used.reshape(-1), 1.0),
                        (w.transpose(1, 2, 0).reshape(k * q, n), -1.0), ub=0.0)

    # ---- Serial subgraphs on one accelerator (Fig. 4): (d, p) starts after (d, p-1) ends ----------
    if q > 1:
        m.add_terms("serial", (start[:, 1:].reshape(-1), 1.0), (end[:, :-1].reshape(-1), -1.0), lb=0.0)

    # ---- Invocation (Fig. 3 (9)): a subgraph starts once every group copied into it is in RAM -----
    #      S_b >= F_source(g) when in_gb = 1 (an indicator: big-M from the time window for MIP solvers).
    g_idx, b_idx = np.meshgrid(np.arange(G), blocks, indexing="ij")
    m.add_indicators("invocation: S_b >= F_source when in_gb", G * k * q, binary=cin.reshape(-1), value=1,
                     rows=np.repeat(np.arange(G * k * q), 2),
                     cols=np.stack([start.reshape(-1)[b_idx.reshape(-1)],
                                    finish[graph.group_source[g_idx.reshape(-1)]]], axis=1).reshape(-1),
                     vals=np.tile([1.0, -1.0], G * k * q), lb=0.0, big_m_lb=H)

    # ---- Finish times: a subgraph's nodes finish at its end; a CPU node after its predecessors ----
    m.add_indicators("finish: F_v >= E_b when w_vb", n * k * q, binary=w.reshape(-1), value=1,
                     rows=np.repeat(np.arange(n * k * q), 2),
                     cols=np.stack([np.repeat(finish, k * q), np.tile(end.reshape(-1), n)], axis=1).reshape(-1),
                     vals=np.tile([1.0, -1.0], n * k * q), lb=0.0, big_m_lb=H)
    #   F_v >= F_u + cpu_v * (1 - sum_d x_vd): valid for every placement (a node never finishes first).
    m.add_terms("finish: CPU after predecessors", (finish[dst], 1.0), (finish[src], -1.0), (on_acc[dst], cpu[dst]),
                lb=cpu[dst])
    m.add_terms("finish: CPU node", (finish, 1.0), (on_acc, cpu), lb=cpu)

    # ---- Latency: every sink and every subgraph is done by T --------------------------------------
    sinks = np.flatnonzero([len(s) == 0 for s in graph.successors])
    m.add_terms("latency: T >= F_sink", (np.full(len(sinks), T), 1.0), (finish[sinks], -1.0), lb=0.0)
    m.add_terms("latency: T >= E_b", (np.full(k * q, T), 1.0), (end.reshape(-1), -1.0), lb=0.0)

    # ---- Path work (valid inequalities): along any path nodes compute one after another, and each -
    #      device boundary it crosses is copied out and in: C_v >= C_u + work_v + c_uv sum_d |x_ud - x_vd|.
    if path_rows:
        C_, X, costly = index["C"], index["X"], index["costly"]
        plain = np.setdiff1d(np.arange(len(src)), costly)
        extra = acc - cpu[:, None]  # work_v = cpu_v + sum_d (acc_vd - cpu_v) x_vd
        m.add_terms("path work: C_v >= work_v", (C_, 1.0), (on_acc, -extra), lb=cpu)
        m.add_terms("path work: C_v >= C_u + work_v", (C_[dst[plain]], 1.0), (C_[src[plain]], -1.0),
                    (on_acc[dst[plain]], -extra[dst[plain]]), lb=cpu[dst[plain]])
        u, v = src[costly], dst[costly]
        m.add_terms("path work: C_v >= C_u + work_v + c_uv sum_d X_uvd", (C_[v], 1.0), (C_[u], -1.0),
                    (on_acc[v], -extra[v]), (X, -cost[group[costly]]), lb=cpu[v])
        for sign, name in ((1.0, "X >= x_u - x_v"), (-1.0, "X >= x_v - x_u")):
            m.add_terms(f"path work: {name}", (X.reshape(-1), 1.0), (on_acc[u].reshape(-1), -sign),
                        (on_acc[v].reshape(-1), sign), lb=0.0)
        m.add_terms("path work: T >= C_v + tail_v", (np.full(n, T), 1.0), (C_, -1.0), lb=data.tail / data.scale)

    # ---- Symmetry (identical accelerators): accelerator d+1 holds a class only if d holds an earlier one
    #      P_cd = 1 when d holds a class <= c:  P_cd >= P_(c-1)d, P_cd >= x_cd, P_cd <= P_(c-1)d + x_cd;
    #      x_c(d+1) <= P_(c-1)d.
    if "P" in index:
        P = index["P"]
        m.add_terms("symmetry: P >= x", (P.reshape(-1), 1.0), (x[:, :-1].reshape(-1), -1.0), lb=0.0)
        m.add_terms("symmetry: P rises", (P[1:].reshape(-1), 1.0), (P[:-1].reshape(-1), -1.0), lb=0.0)
        m.add_terms("symmetry: P <= P_prev + x", (P[1:].reshape(-1), 1.0), (P[:-1].reshape(-1), -1.0),
                    (x[1:, :-1].reshape(-1), -1.0), ub=0.0)
        m.add_terms("symmetry: P_0 <= x_0", (P[0], 1.0), (x[0, :-1], -1.0), ub=0.0)
        m.add_terms("symmetry: x_c(d+1) <= P_(c-1)d", (x[1:, 1:].reshape(-1), 1.0), (P[:-1].reshape(-1), -1.0), ub=0.0)
        m.add_terms("symmetry: class 0 on acc 0 or a CPU", (x[0, 1:], 1.0), ub=0.0)

    # ---- Device rules: at most max_stages accelerators in use ---------------------------------------
    if data.max_stages is not None:
        stage_rows(m, x, data.max_stages)

    # ---- Objective: the latency ---------------------------------------------------------------------
    m.minimize([T], [1.0])
    slack = (k * q if used is not None else 0) / data.scale
    return LatencyIP(m, data, index, slack)


def _canonical(data: LatencyData, class_device: np.ndarray) -> np.ndarray:
    """Identical accelerators relabelled in the order of the first class each holds (the symmetry rows' order)."""
    k = data.cluster.accelerators
    first = [int(np.flatnonzero(class_device == d)[0]) if np.any(class_device == d) else data.classes + d
             for d in range(k)]
    relabel = np.arange(k + 1)
    relabel[np.argsort(first, kind="stable")] = np.arange(k)
    return relabel[class_device]


def _encode(ip: LatencyIP, device: np.ndarray, subgraph: np.ndarray | None) -> np.ndarray | None:
    data, index = ip.data, ip.index
    graph, cluster, q = data.graph, data.cluster, data.q
    n, k = graph.n, cluster.accelerators
    dev = np.where(device >= k, k, device)  # all CPUs alike
    class_device = np.full(data.classes, k, dtype=np.int64)
    class_device[data.cls] = dev
    if np.any(class_device[data.cls] != dev):
        return None  # a colour class split over devices
    on = class_device < k
    if np.any(on & ~data.allowed[np.arange(data.classes), np.minimum(class_device, k - 1)]) or np.any(
            data.no_cpu & ~on):
        return None
    if data.max_stages is not None and len(np.unique(class_device[on])) > data.max_stages:
        return None
    held = np.bincount(class_device[on], weights=data.memory[on], minlength=k)
    if np.any((data.cap >= 0) & (held > data.cap)):
        return None
    if "P" in index:
        class_device = _canonical(data, class_device)
    dev = class_device[data.cls]
    try:
        blocks = invocation_blocks(graph, cluster, dev, subgraph)
    except PlacementError:
        return None  # subgraphs that wait on each other (or are not contiguous)
    first = {d: blocks.device.index(d) for d in set(blocks.device) if d < k}
    piece = np.where(dev < k, blocks.block - np.array([first.get(int(d), 0) for d in dev]), -1)
    if piece.max(initial=0) >= q:
        return None
    W = np.zeros((n, k, q), dtype=bool)
    W[np.flatnonzero(dev < k), dev[dev < k], piece[dev < k]] = True
    Z = np.zeros_like(W)
    for v in graph.topological_order.tolist():
        for u in graph.predecessors[v].tolist():
            Z[v] |= Z[u] | (W[u] & ~W[v])
    src, dst, group = graph.src, graph.dst, graph.edge_group
    IN = np.zeros((len(data.cost), k, q), dtype=bool)
    OUT = np.zeros_like(IN)
    for e in np.flatnonzero(np.any(W[src] != W[dst], axis=(1, 2))).tolist():
        IN[group[e]] |= W[dst[e]] & ~W[src[e]]
        OUT[group[e]] |= W[src[e]] & ~W[dst[e]]
    used = W.any(axis=0)
    duration = (np.einsum("nkq,nk->kq", W.astype(np.int64), np.where(data.allowed[data.cls], data.acc, 0))
                + np.einsum("gkq,g->kq", IN.astype(np.int64) + OUT, data.cost))
    if "used" in index:
        duration = np.maximum(duration, used)
    # The earliest schedule in model units, blocks in the evaluator's invocation order.
    start, end = np.zeros((k, q), dtype=np.int64), np.zeros((k, q), dtype=np.int64)
    finish = np.zeros(n, dtype=np.int64)
    members = [np.flatnonzero(blocks.block == b) for b in range(len(blocks.device))]
    for b in blocks.order:
        nodes = members[b]
        ready = max((finish[u] for v in nodes.tolist() for u in graph.predecessors[v].tolist()
                     if blocks.block[u] != b), default=0)
        d = blocks.device[b]
        if d < k:
            p = int(piece[nodes[0]])
            ready = max(ready, int(end[d, p - 1]) if p else 0)
            start[d, p], end[d, p] = ready, ready + duration[d, p]
            finish[nodes] = end[d, p]
        else:
            finish[nodes] = ready + data.cpu[nodes]
    for p in range(1, q):  # an empty subgraph starts and ends where the one before it ends
        empty = ~used[:, p]
        start[empty, p] = end[empty, p] = end[empty, p - 1]
    values = np.zeros(ip.model.num_vars)
    on_acc = class_device[:, None] == np.arange(k)[None, :]
    values[index["x"]] = on_acc
    values[index["w"]] = W
    values[index["z"]], values[index["in"]], values[index["out"]] = Z, IN, OUT
    if "used" in index:
        values[index["used"]] = used
    latency = max(int(finish.max(initial=0)), int(end.max(initial=0)), data.low)
    if "C" in index:
        work = np.where(dev < k, data.acc[np.arange(n), np.minimum(dev, k - 1)], data.cpu)
        node_acc = on_acc[data.cls]
        costly = index["costly"]
        crossing = np.zeros(len(src), dtype=np.int64)
        crossing[costly] = data.cost[group[costly]] * (node_acc[src[costly]] ^ node_acc[dst[costly]]).sum(axis=1)
        path = work.copy()
        edge_of = {(int(a), int(b)): e for e, (a, b) in enumerate(zip(src.tolist(), dst.tolist()))}
        for v in graph.topological_order.tolist():
            for u in graph.predecessors[v].tolist():
                path[v] = max(path[v], path[u] + work[v] + crossing[edge_of[(u, v)]])
        values[index["C"]] = path / data.scale
        values[index["X"]] = node_acc[src[costly]] ^ node_acc[dst[costly]]
        latency = max(latency, int((path + data.tail).max(initial=0)))
    if "P" in index:
        values[index["P"]] = np.maximum.accumulate(on_acc[:, :-1], axis=0)
    if latency > data.high:
        return None  # outside the time window the program was built with
    values[index["S"]], values[index["E"]] = start / data.scale, end / data.scale
    values[index["F"]] = finish / data.scale
    values[index["T"]] = latency / data.scale
    return values
