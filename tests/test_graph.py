"""Graph and Cluster: construction, immutability, the networkx view, and every bad input."""

from __future__ import annotations

import itertools
import math
import re
import warnings

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import any_graphs, graph_specs, training_specs

from exactplace import (
    Cluster,
    CycleError,
    ExactplaceError,
    Graph,
    GraphError,
    InputFormatError,
    Node,
    ParameterError,
    evaluate,
    solve,
)
from exactplace.core.cluster import MAX_INTER_MACHINE_COST

ARRAYS = (
    "ids", "cpu_time", "acc_time", "supported", "memory", "comm", "backward", "color",
    "src", "dst", "edge_cost", "edge_group", "group_source", "group_cost", "topological_order",
)


def chain(n: int = 3, **node_fields) -> Graph:
    nodes = [Node(10 * i, 1.0 + i, 0.5, **node_fields) for i in range(n)]
    return Graph(nodes, [(10 * i, 10 * i + 10) for i in range(n - 1)])


# -- construction ------------------------------------------------------------------------


@given(graph_specs())
def test_construction_keeps_every_field(spec) -> None:
    nodes, edges = spec
    g = Graph(nodes, edges)
    assert g.n == len(nodes)
    assert [v.id for v in g.nodes()] == [v.id for v in nodes]
    for i, v in enumerate(nodes):
        assert g.index_of(v.id) == i
        back = g.node(i)
        assert (back.cpu_time, back.acc_time, back.memory, back.comm, back.color, back.backward) == (
            v.cpu_time, v.acc_time, v.memory, v.comm, v.color, v.backward)
        assert back.name == (v.name if v.name is not None else str(v.id))
        assert g.supported[i] == (v.acc_time is not None)
        assert g.acc_time[i] == (math.inf if v.acc_time is None else v.acc_time)
    comm = {v.id: v.comm for v in nodes}
    expected = {(e[0], e[1]): (e[2] if len(e) == 3 else comm[e[0]]) for e in edges}
    assert {(u, v): c for u, v, c in g.edges()} == expected
    assert g.m == len(expected)


@given(any_graphs())
def test_topological_order_and_adjacency(g: Graph) -> None:
    order = g.topological_order.tolist()
    assert sorted(order) == list(range(g.n))
    place = {v: p for p, v in enumerate(order)}
    for u, v in zip(g.src.tolist(), g.dst.tolist()):
        assert place[u] < place[v]
        assert v in g.successors[u].tolist() and u in g.predecessors[v].tolist()
    assert sum(len(s) for s in g.successors) == sum(len(p) for p in g.predecessors) == g.m


@given(any_graphs())
def test_colour_classes_are_dense_and_respect_labels(g: Graph) -> None:
    labels = g.color_labels
    for i in range(g.n):
        for j in range(g.n):
            same = labels[i] is not None and labels[i] == labels[j]
            assert (g.color[i] == g.color[j]) == (same or i == j)
    assert set(g.color.tolist()) == set(range(int(g.color.max()) + 1))


@given(any_graphs())
def test_comm_groups_follow_distinct_outgoing_costs(g: Graph) -> None:
    for u in range(g.n):
        out = g.edge_cost[g.src == u]
        groups = np.flatnonzero(g.group_source == u)
        assert sorted(g.group_cost[groups].tolist()) == sorted(set(out.tolist()))
    for e in range(g.m):
        group = g.edge_group[e]
        assert g.group_source[group] == g.src[e] and g.group_cost[group] == g.edge_cost[e]
    uniform = all(len(set(g.edge_cost[g.src == u].tolist())) <= 1 for u in range(g.n))
    assert g.has_uniform_edge_costs == uniform


@given(training_specs())
def test_training_graph_flags(spec) -> None:
    nodes, edges = spec
    g = Graph(nodes, edges)
    assert g.is_training
    assert g.backward.tolist() == [v.backward for v in nodes]
    assert "training" in repr(g)


def test_inference_graph_repr() -> None:
    g = chain()
    assert not g.is_training and repr(g) == "<Graph inference: 3 nodes, 2 edges>"


def test_describe_uses_name() -> None:
    g = Graph([Node(7, 1.0, 1.0, name="conv1"), Node(8, 1.0, 1.0)], [])
    assert g.describe(0) == "node 7 ('conv1')" and g.describe(1) == "node 8"


def test_index_of_unknown_id() -> None:
    with pytest.raises(GraphError, match="Unknown node id 99"):
        chain().index_of(99)


@given(any_graphs())
def test_equality_and_rebuild(g: Graph) -> None:
    rebuilt = Graph(g.nodes(), g.edges())
    assert rebuilt == g
    assert Graph(list(reversed(g.nodes())), list(reversed(g.edges()))) == Graph(
        list(reversed(rebuilt.nodes())), rebuilt.edges())
    changed = [Node(**{**v.__dict__, "cpu_time": v.cpu_time + 1}) if i == 0 else v for i, v in enumerate(g.nodes())]
    assert Graph(changed, g.edges()) != g
    assert g != "not a graph"


# -- immutability --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ARRAYS)
def test_arrays_are_read_only(name: str) -> None:
    g = Graph([Node(1, 1.0, 2.0, comm=1.0), Node(2, 3.0, None, color=4), Node(3, 1.0, 1.0)], [(1, 2), (1, 3, 2.0)])
    array = getattr(g, name)
    assert isinstance(array, np.ndarray) and not array.flags.writeable
    with pytest.raises(ValueError):
        array[0] = array[0]


def test_adjacency_arrays_are_read_only() -> None:
    g = chain()
    for array in (*g.successors, *g.predecessors):
        assert not array.flags.writeable


def test_attributes_cannot_be_rebound() -> None:
    g = chain()
    with pytest.raises(AttributeError):
        g.cpu_time = np.zeros(3)
    with pytest.raises(AttributeError):
        g.n = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(g)


def test_node_is_frozen() -> None:
    node = Node(1, 1.0, 1.0)
    with pytest.raises(AttributeError):
        node.cpu_time = 2.0  # type: ignore[misc]


def test_nodes_given_as_generator_are_consumed_once() -> None:
    g = Graph((Node(i, 1.0, 1.0) for i in range(3)), ((i, i + 1) for i in range(2)))
    assert (g.n, g.m) == (3, 2)


# -- networkx view -------------------------------------------------------------------------


@given(any_graphs())
def test_networkx_view(g: Graph) -> None:
    view = g.to_networkx()
    assert isinstance(view, nx.DiGraph) and nx.is_directed_acyclic_graph(view)
    assert sorted(view.nodes) == sorted(g.ids.tolist())
    assert sorted((u, v, d["cost"]) for u, v, d in view.edges(data=True)) == sorted(g.edges())
    for node in g.nodes():
        attributes = view.nodes[node.id]
        assert Node(id=node.id, **attributes) == node
    view.add_node(-999)  # a fresh copy: the graph is unaffected
    assert -999 not in g.to_networkx()


# -- bad input ------------------------------------------------------------------------------


def test_empty_graph() -> None:
    with pytest.raises(GraphError, match="empty"):
        Graph([], [])


def test_cycle_is_named() -> None:
    nodes = [Node(i, 1.0, 1.0) for i in (1, 2, 3, 4)]
    with pytest.raises(CycleError, match="cycle") as info:
        Graph(nodes, [(1, 2), (2, 3), (3, 4), (4, 2)])
    assert sorted(info.value.cycle) == [2, 3, 4]
    shown = str(info.value)
    cycle = info.value.cycle
    assert " -> ".join(str(c) for c in [*cycle, cycle[0]]) in shown
    assert isinstance(info.value, GraphError) and isinstance(info.value, ExactplaceError)


@given(graph_specs(min_nodes=2), st.data())
def test_random_back_edge_gives_a_real_cycle(spec, data) -> None:
    nodes, edges = spec
    g = Graph(nodes, edges)
    digraph = g.to_networkx()
    pairs = [(u, v) for u in digraph for v in nx.descendants(digraph, u)]
    if not pairs:
        return
    u, v = data.draw(st.sampled_from(pairs))
    with pytest.raises(CycleError) as info:
        Graph(nodes, [*edges, (v, u)])
    cycle = info.value.cycle
    closed = [*cycle, cycle[0]]
    with_back = {(a, b) for a, b, _ in g.edges()} | {(v, u)}
    assert all((a, b) in with_back for a, b in itertools.pairwise(closed))


def test_self_loop() -> None:
    with pytest.raises(CycleError, match=r"Edge 5 -> 5 is a self-loop") as info:
        Graph([Node(5, 1.0, 1.0)], [(5, 5)])
    assert info.value.cycle == [5]


@pytest.mark.parametrize("edge, end", [((1, 9), "destination"), ((9, 1), "source")])
def test_edge_to_unknown_node(edge, end) -> None:
    with pytest.raises(GraphError, match=rf"Edge {edge[0]} -> {edge[1]} names an unknown {end} node 9"):
        Graph([Node(1, 1.0, 1.0), Node(2, 1.0, 1.0)], [edge])


def test_duplicate_id() -> None:
    with pytest.raises(GraphError, match="Duplicate node id 3"):
        Graph([Node(3, 1.0, 1.0), Node(4, 1.0, 1.0), Node(3, 2.0, 1.0)], [])


@pytest.mark.parametrize("field", ["cpu_time", "acc_time", "memory", "comm"])
@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, -math.inf])
def test_bad_node_value(field: str, value: float) -> None:
    fields = {"id": 42, "cpu_time": 1.0, "acc_time": 1.0, field: value}
    with pytest.raises(GraphError, match=rf"Node 42: field '{field}' must be finite and non-negative"):
        Graph([Node(1, 1.0, 1.0), Node(**fields)], [])


@pytest.mark.parametrize(
    ("field", "value"),
    [(field, value) for field in ("cpu_time", "acc_time", "memory", "comm") for value in ("1.0", True, [1.0], None)
     if (field, value) != ("acc_time", None)],  # acc_time None means "unsupported on accelerators": valid
)
def test_bad_node_value_type(field: str, value: object) -> None:
    fields = {"id": 42, "cpu_time": 1.0, "acc_time": 1.0, field: value}
    with pytest.raises(GraphError, match=rf"Node 42: field '{field}' must be a number"):
        Graph([Node(**fields)], [])


@pytest.mark.parametrize("bad_id", ["a", 1.0, True, None])
def test_bad_node_id_type(bad_id: object) -> None:
    with pytest.raises(GraphError, match="position 1 has id"):
        Graph([Node(1, 1.0, 1.0), Node(bad_id, 1.0, 1.0)], [])  # type: ignore[arg-type]


@pytest.mark.parametrize("color", ["red", 1.5, True])
def test_bad_color_type(color: object) -> None:
    with pytest.raises(GraphError, match="Node 1: field 'color' must be an integer"):
        Graph([Node(1, 1.0, 1.0, color=color)], [])  # type: ignore[arg-type]


@pytest.mark.parametrize("backward", ["yes", 2, None, 1.0])
def test_bad_backward_type(backward: object) -> None:
    with pytest.raises(GraphError, match="Node 1: field 'backward' must be a boolean"):
        Graph([Node(1, 1.0, 1.0, backward=backward)], [])  # type: ignore[arg-type]


def test_numpy_scalars_are_accepted() -> None:
    g = Graph([Node(np.int64(1), np.float64(1.0), np.float32(2.0), backward=np.bool_(False), color=np.int32(3))], [])
    assert g.ids.tolist() == [1] and g.acc_time.tolist() == [2.0] and g.color_labels == (3,)


def test_not_a_node() -> None:
    with pytest.raises(GraphError, match=r"position 0 .*Node"):
        Graph([{"id": 1}], [])  # type: ignore[list-item]


@pytest.mark.parametrize("cost", [-0.5, math.nan, math.inf])
def test_bad_edge_cost(cost: float) -> None:
    with pytest.raises(GraphError, match=r"Edge 1 -> 2 has cost"):
        Graph([Node(1, 1.0, 1.0), Node(2, 1.0, 1.0)], [(1, 2, cost)])


@pytest.mark.parametrize(
    "edge, pattern",
    [
        ((1, 2, "x"), r"Edge 1 -> 2 has cost 'x'"),
        ((1, 2, None), r"Edge 1 -> 2 has cost None"),
        ((1, [2]), r"names .*\[2\]"),
        ((1.0, 2), r"names .*1\.0"),
        ((True, 2), r"names .*True"),
        ((1,), r"must be \(source, destination\)"),
        ((1, 2, 3.0, 4.0), r"must be \(source, destination\)"),
        (7, r"must be \(source, destination\)"),
    ],
)
def test_bad_edge_types(edge: object, pattern: str) -> None:
    with pytest.raises(GraphError, match=pattern):
        Graph([Node(1, 1.0, 1.0), Node(2, 1.0, 1.0)], [edge])  # type: ignore[list-item]


def test_backward_to_forward_edge() -> None:
    nodes = [Node(1, 1.0, 1.0), Node(2, 1.0, 1.0, backward=True)]
    with pytest.raises(GraphError, match=r"Edge 2 -> 1 goes from a backward node to a forward node"):
        Graph(nodes, [(2, 1)])
    assert Graph(nodes, [(1, 2)]).is_training  # forward -> backward is fine


def test_conflicting_duplicate_edge() -> None:
    nodes = [Node(1, 1.0, 1.0, comm=2.0), Node(2, 1.0, 1.0)]
    with pytest.raises(GraphError, match=r"Edge 1 -> 2 is given twice with different costs \(2.0 and 3.0\)"):
        Graph(nodes, [(1, 2), (1, 2, 3.0)])
    assert Graph(nodes, [(1, 2), (1, 2, 2.0)]).m == 1  # a consistent duplicate is merged


def test_errors_are_value_errors() -> None:
    with pytest.raises(ValueError):
        Graph([], [])


# -- Cluster -----------------------------------------------------------------------------------


def test_cluster_basics() -> None:
    c = Cluster(accelerators=2, memory=[4.0, 8.0], cpus=1)
    assert c.num_devices == 3 and c.device_names() == ["acc0", "acc1", "cpu0"]
    assert c.max_memory == 8.0 and not c.is_homogeneous
    assert c.is_accelerator(1) and not c.is_accelerator(2)
    assert Cluster.from_dict(c.to_dict()) == c
    assert Cluster(2, math.inf, 1).to_dict()["memory"] == [None, None]
    assert Cluster.from_dict(Cluster(2, math.inf, 1).to_dict()) == Cluster(2, math.inf, 1)
    assert Cluster(0, cpus=2).max_memory == 0.0
    with pytest.raises(ParameterError, match="Device 3 does not exist"):
        c.device_name(3)
    with pytest.raises(AttributeError):
        c.cpus = 4  # type: ignore[misc]
    assert not c.memory.flags.writeable and not c.speed.flags.writeable


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"accelerators": -1}, r"The 'accelerators' parameter of Cluster must be a non-negative integer "
                               r"\(at most 2\*\*62\)\. Got -1"),
        ({"accelerators": 1, "cpus": -2}, r"The 'cpus' parameter of Cluster must be a non-negative integer "
                                          r"\(at most 2\*\*62\)\. Got -2"),
        ({"accelerators": 1.0}, r"'accelerators' .*Got 1.0 instead"),
        ({"accelerators": True}, r"'accelerators' .*Got True instead"),
        ({"accelerators": 1, "cpus": "2"}, r"'cpus' .*Got '2' instead"),
        ({"accelerators": 0, "cpus": 0}, r"at least one device"),
        ({"accelerators": 2, "memory": -1.0}, r"'memory' parameter of Cluster must be non-negative"),
        ({"accelerators": 2, "memory": math.nan}, r"'memory' parameter of Cluster must be non-negative"),
        ({"accelerators": 2, "memory": [1.0]}, r"'memory' parameter .* one value per accelerator \(2\)"),
        ({"accelerators": 1, "memory": "big"}, r"'memory' parameter of Cluster must be a number"),
        ({"accelerators": 1, "memory": None}, r"'memory' parameter of Cluster must be a number"),
        ({"accelerators": 2, "speed": 0.0}, r"'speed' parameter of Cluster must be positive"),
        ({"accelerators": 2, "speed": [1.0, -1.0]}, r"'speed' parameter of Cluster must be non-negative and finite"),
        ({"accelerators": 1, "speed": math.inf}, r"'speed' parameter of Cluster must be non-negative and finite"),
        ({"accelerators": 1, "speed": math.nan}, r"'speed'"),
    ],
)
def test_cluster_validation(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ParameterError, match=pattern):
        Cluster(**kwargs)


# -- numbers out of range are refused at the boundary, in the one message format -------------------


@pytest.mark.parametrize("field", ["cpu_time", "acc_time", "memory", "comm", "sync"])
def test_an_integer_beyond_the_largest_float_is_a_graph_error(field: str) -> None:
    values = {"cpu_time": 1.0, "acc_time": 1.0, field: 10**400}
    with pytest.raises(GraphError, match=f"Node 1: field '{field}' must be finite and non-negative. "
                                         "Got an integer of 401 digits instead."):
        Graph([Node(1, **values)], [])


def test_a_color_beyond_64_bits_is_a_graph_error() -> None:
    # the file format reads colors as 64-bit integers: a larger one could be written but not read back
    with pytest.raises(GraphError, match=r"field 'color' must be an integer of 64 bits or None\. Got an integer"):
        Graph([Node(1, 1.0, 1.0, color=10**400)], [])
    assert Graph([Node(1, 1.0, 1.0, color=2**63 - 1)], []).color_labels == (2**63 - 1,)


def test_a_huge_edge_cost_or_id_is_a_graph_error() -> None:
    with pytest.raises(GraphError, match="Edge 1 -> 2 has cost an integer of 401 digits"):
        Graph([Node(1, 1.0, 1.0), Node(2, 1.0, 1.0)], [(1, 2, 10**400)])
    with pytest.raises(GraphError, match="has id an integer of 401 digits; ids must fit in 64 bits"):
        Graph([Node(10**400, 1.0, 1.0)], [])


@pytest.mark.parametrize(("parameter", "value"), [("time_limit", 10**400), ("rel_gap", 10**400),
                                                  ("time_limit", math.nan), ("rel_gap", math.nan)])
def test_solve_refuses_numbers_out_of_range(parameter: str, value: float) -> None:
    graph = Graph([Node(1, 1.0, 1.0)], [])
    with pytest.raises(ParameterError, match=f"The '{parameter}' parameter of solve must be"):
        solve(graph, Cluster(1), method="greedy", **{parameter: value})


@pytest.mark.parametrize(("options", "fragment"), [
    ({"machines": 2, "inter_machine_cost": 1e308}, "'inter_machine_cost' parameter of Cluster must be a number in "
                                                   "[1, 1000000]"),
    ({"machines": 2, "inter_machine_cost": 10**400}, "Got an integer of 401 digits instead"),
    ({"speed": 1e-300}, "'speed' parameter of Cluster must be positive, in [0.000001, 1000000]"),
    ({"memory": 10**400}, "'memory' parameter of Cluster must be a number or a list of numbers. Got an integer"),
    ({"memory": math.nan}, "'memory' parameter of Cluster must be non-negative"),
])
def test_cluster_values_that_would_overflow_are_refused(options: dict, fragment: str) -> None:
    with pytest.raises(ParameterError, match=re.escape(fragment)):
        Cluster(2, **options)


def test_the_largest_inter_machine_cost_keeps_loads_finite() -> None:
    # the largest values a graph may hold, priced at the largest ratio: every load stays a finite number
    big = 1e300 / 4
    graph = Graph([Node(1, big, big), Node(2, big, big)], [(1, 2, big)])
    cluster = Cluster(2, cpus=0, machines=2, inter_machine_cost=MAX_INTER_MACHINE_COST)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy overflow warning fails the test
        value = evaluate(graph, cluster, np.array([0, 1]))
    assert math.isfinite(value) and value > big


def test_cluster_from_dict_refuses_unknown_and_missing_fields() -> None:
    data = Cluster(2, 8.0, 1).to_dict()
    with pytest.raises(InputFormatError, match=re.escape("unknown field 'sped' (did you mean 'speed'?)")):
        Cluster.from_dict({**data, "sped": [1.0, 1.0]})
    del data["cpus"]
    with pytest.raises(InputFormatError, match="missing the required field 'cpus'"):
        Cluster.from_dict(data)
