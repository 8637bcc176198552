"""The pipeline IP of a fixed stage count under a schedule: stage ``i`` on accelerator ``i``, its
memory counting the microbatches the schedule keeps in flight there (:mod:`exactplace.core.schedule`).

Over colour classes ``c`` (a class runs on one device), stages ``i = 0..p-1`` and communication
groups ``g`` (a node's output: source class ``s_g``, the distinct classes ``T_g`` it reaches)::

    x[c, i] in {0, 1}, L >= 0, in[g, i] >= 0, out[g, i] >= 0

    sum_i x[c, i] = 1                                      each class in one stage
    sum_c x[c, i] >= 1                                     every stage used
    sum_i i x[a, i] <= sum_i i x[b, i]                     forward edge a -> b: b's stage is not earlier
    sum_i i x[a, i] >= sum_i i x[b, i]                     backward edge a -> b: gradients run back
    sum_c (mem_c + (f_i - 1) act_c) x[c, i] <= cap         stage i's memory with f_i microbatches in flight
    out[g, i] >= x[s_g, i] - x[t, i],  t in T_g            the output leaves stage i
    in[g, i] >= x[t, i] - x[s_g, i],   t in T_g            ... and enters stage i (once per stage)
    L >= sum_c acc_c x[c, i] + sum_g cost_g (in[g, i] + out[g, i])   (overlap: L >= each of the two)

    minimize L

Minimizing pushes ``in`` and ``out`` down to their bounds wherever they could bind, so ``L`` at
the optimum is the evaluator's max load of the split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exactplace.core.graph import Graph

from .model import Kind, Model

__all__ = ["PipelineVariables", "pipeline_ip"]


@dataclass(frozen=True)
class PipelineVariables:
    """Indices of the IP's variables: ``x[c, i]`` (class in stage) and ``load`` (the max load L)."""

    x: np.ndarray
    load: int


def pipeline_ip(graph: Graph, stages: int, in_flight: tuple[int, ...], memory_cap: float,
                overlap: bool = False) -> tuple[Model, PipelineVariables]:
    """The IP of the module docstring for ``stages`` stages holding ``in_flight[i]`` microbatches each.

    Every node must be supported on accelerators (a CPU is not a stage; callers refuse others).

    >>> from exactplace.core.graph import Node
    >>> from exactplace.solvers import solve_model
    >>> g = Graph([Node(i, 1.0, t, memory=2.0, activation=1.0) for i, t in enumerate([2.0, 1.0, 1.0])],
    ...           [(0, 1), (1, 2)])
    >>> model, v = pipeline_ip(g, 2, (2, 1), memory_cap=5.0)
    >>> out = solve_model(model, "highs")
    >>> out.objective, np.argmax(out.values[v.x], axis=1).tolist()
    (2.0, [0, 1, 1])
    """
    classes = int(graph.color.max()) + 1
    color = graph.color
    acc = np.bincount(color, weights=graph.acc_time, minlength=classes)
    mem = np.bincount(color, weights=graph.memory, minlength=classes)
    act = np.bincount(color, weights=graph.activation, minlength=classes)
    a, b = color[graph.src], color[graph.dst]
    crossing = a != b
    forward = crossing & ~graph.backward[graph.src] & ~graph.backward[graph.dst]
    gradient = crossing & graph.backward[graph.src] & graph.backward[graph.dst]
    # (group, target class) pairs that can cross: the group's output reaches a class of its own.
    reach = np.unique(np.stack([graph.edge_group[crossing], b[crossing]], axis=1), axis=0).reshape(-1, 2)
    groups = np.unique(reach[:, 0])
    source = color[graph.group_source[groups]]
    cost = graph.group_cost[groups]
    slot = np.searchsorted(groups, reach[:, 0])
    stage = np.arange(stages, dtype=np.float64)

    m = Model("pipeline")
    x = m.add_vars((classes, stages), ub=1, kind=Kind.INTEGER, name="x: class in stage")
    load = int(m.add_vars(1, name="L: max load")[0])
    entering = m.add_vars((len(groups), stages), name="in: group enters stage")
    leaving = m.add_vars((len(groups), stages), name="out: group leaves stage")

    m.add_terms("each class in one stage", (x, 1.0), lb=1.0, ub=1.0)
    m.add_terms("every stage used", (x.T, 1.0), lb=1.0)
    for name, edges, sign in (("forward edges run to later stages", forward, 1.0),
                              ("backward edges run to earlier stages", gradient, -1.0)):
        per_entry = np.broadcast_to(sign * stage, (int(edges.sum()), stages))
        m.add_terms(name, (x[a[edges]], per_entry), (x[b[edges]], -per_entry), ub=0.0)
    flight = np.asarray(in_flight, dtype=np.float64)
    m.add_terms("memory with the microbatches in flight", (x.T, mem[None, :] + (flight[:, None] - 1) * act[None, :]),
                ub=memory_cap)
    pairs = np.repeat(np.arange(len(reach)), stages)
    at = np.tile(np.arange(stages), len(reach))
    m.add_terms("the output leaves its stage", (leaving[slot[pairs], at], 1.0), (x[source[slot[pairs]], at], -1.0),
                (x[reach[pairs, 1], at], 1.0), lb=0.0)
    m.add_terms("the output enters a stage", (entering[slot[pairs], at], 1.0), (x[reach[pairs, 1], at], -1.0),
                (x[source[slot[pairs]], at], 1.0), lb=0.0)
    compute = (x.T, np.broadcast_to(acc, (stages, classes)))
    communication = ((entering.T, np.broadcast_to(cost, (stages, len(groups)))),
                     (leaving.T, np.broadcast_to(cost, (stages, len(groups)))))
    bound = (np.full(stages, load), -1.0)
    if overlap:
        m.add_terms("L covers each stage's compute", compute, bound, ub=0.0)
        m.add_terms("L covers each stage's communication", *communication, bound, ub=0.0)
    else:
        m.add_terms("L covers each stage's load", compute, *communication, bound, ub=0.0)
    m.minimize([load], [1.0])
    return m, PipelineVariables(x, load)
