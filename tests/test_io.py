"""Reading and writing workloads, splits and plans: round trips and every malformed input."""

from __future__ import annotations

import copy
import json
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import any_graphs, clusters, placed_instances, training_graphs

from exactplace import (
    Cluster,
    Graph,
    GraphError,
    InputFormatError,
    Node,
    ParameterError,
    Placement,
    PlacementError,
    Status,
    solve,
)
from exactplace.core.placement import PLAN_FORMAT_VERSION
from exactplace.data import shipped_workloads, workload_path
from exactplace.io import (
    EDGE_FIELDS,
    NODE_FIELDS,
    WORKLOAD_FIELDS,
    Workload,
    read_placement,
    read_split,
    read_workload,
    split_file_from_dict,
    split_from_dict,
    split_to_dict,
    workload_from_dict,
    workload_to_dict,
    write_workload,
)


def canonical(graph: Graph) -> Graph:
    """What the file format can hold: a node's comm is the cost of its first outgoing edge (0 for sinks)."""
    first: dict[int, float] = {}
    for u, _, c in graph.edges():
        first.setdefault(u, c)
    return Graph([Node(**{**v.__dict__, "comm": first.get(v.id, 0.0)}) for v in graph.nodes()], graph.edges())


def finite_cluster(cluster: Cluster) -> Cluster:
    memory = cluster.memory[0] if cluster.accelerators and math.isfinite(cluster.memory[0]) else 5.0
    return Cluster(cluster.accelerators, memory, cluster.cpus)


def small_workload() -> dict:
    """A valid workload dict with two nodes and one edge, used as the base of the malformed cases."""
    return {
        "maxSizePerFPGA": 100.0, "maxFPGAs": 2, "maxCPUs": 1,
        "nodes": [
            {"id": 5, "supportedOnFpga": True, "cpuLatency": 2.0, "fpgaLatency": 1.0, "isBackwardNode": False,
             "size": 3.0, "colorClass": 1, "name": "conv"},
            {"id": 6, "supportedOnFpga": 0, "cpuLatency": 4.0, "fpgaLatency": 0.0, "isBackwardNode": 0,
             "size": 1.0},
        ],
        "edges": [{"sourceId": 5, "destId": 6, "cost": 0.5, "size": 7.0}],
    }


# -- round trips ---------------------------------------------------------------------------------


@given(any_graphs(), clusters())
def test_graph_dict_graph_round_trip(graph: Graph, cluster: Cluster) -> None:
    cluster = finite_cluster(cluster)
    data = workload_to_dict(Workload(graph, cluster))
    back = workload_from_dict(json.loads(json.dumps(data)))
    assert back.graph == canonical(graph)
    # the stated counts survive; the cluster itself has at most one device of a kind per node
    assert (back.accelerators, back.cpus) == (cluster.accelerators, cluster.cpus)
    n = graph.n
    assert back.cluster == Cluster(min(cluster.accelerators, n), cluster.max_memory, min(cluster.cpus, n))
    # every field the format carries survives exactly; comm only matters through edge costs
    assert sorted(back.graph.edges()) == sorted(graph.edges())
    strip = [Node(**{**v.__dict__, "comm": 0.0}) for v in graph.nodes()]
    assert [Node(**{**v.__dict__, "comm": 0.0}) for v in back.graph.nodes()] == strip
    assert workload_to_dict(back) == data  # and the dict is a fixed point


@given(any_graphs(), clusters())
def test_write_read_file_round_trip(graph: Graph, cluster: Cluster) -> None:
    cluster = finite_cluster(cluster)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "instance.json"
        write_workload(Workload(graph, cluster), path)
        back = read_workload(path)
    assert back.graph == canonical(graph) and back.name == "instance"
    assert (back.accelerators, back.cpus) == (cluster.accelerators, cluster.cpus)


def test_unlimited_memory_is_written_as_a_huge_number() -> None:
    w = Workload(Graph([Node(1, 1.0, 1.0)], []), Cluster(2, math.inf, 1))
    data = workload_to_dict(w)
    assert data["maxSizePerFPGA"] >= 1e300
    assert workload_from_dict(data).cluster.max_memory >= 1e300


def test_heterogeneous_cluster_cannot_be_written() -> None:
    w = Workload(Graph([Node(1, 1.0, 1.0)], []), Cluster(2, [1.0, 2.0], 1))
    with pytest.raises(InputFormatError, match="heterogeneous"):
        workload_to_dict(w)


@pytest.mark.parametrize("name", shipped_workloads())
def test_shipped_workloads_round_trip(name: str) -> None:
    w = read_workload(workload_path(name))
    raw = json.loads(workload_path(name).read_text())
    assert w.graph.n == len(raw["nodes"]) and w.cluster.accelerators == raw["maxFPGAs"]
    assert workload_from_dict(workload_to_dict(w)).graph == w.graph


def test_reader_fields() -> None:
    w = workload_from_dict(small_workload(), name="small")
    g = w.graph
    assert w.name == "small" and w.cluster == Cluster(2, 100.0, 1)
    assert g.nodes() == [
        Node(5, 2.0, 1.0, memory=3.0, comm=0.5, color=1, backward=False, name="conv"),
        Node(6, 4.0, None, memory=1.0, comm=0.0, color=None, backward=False, name="6"),
    ]
    assert g.edges() == [(5, 6, 0.5)]


def test_extra_top_level_fields_are_kept() -> None:
    data = {**small_workload(), "comment": "hello"}
    assert workload_from_dict(data).extra == {"comment": "hello"}


@pytest.mark.parametrize("true, false", [(True, False), (1, 0)])
def test_booleans_as_bool_or_01(true: object, false: object) -> None:
    data = small_workload()
    data["nodes"][0]["supportedOnFpga"] = true
    data["nodes"][1]["supportedOnFpga"] = false
    data["nodes"][1]["isBackwardNode"] = true
    data["nodes"][0]["isBackwardNode"] = false
    g = workload_from_dict(data).graph
    assert g.supported.tolist() == [True, False] and g.backward.tolist() == [False, True]


@pytest.mark.parametrize("field", ["supportedOnFpga", "isBackwardNode"])
@pytest.mark.parametrize("value", [2, -1, 1.0, 0.0, "true", None, [1]])
def test_bad_booleans(field: str, value: object) -> None:
    data = small_workload()
    data["nodes"][1][field] = value
    with pytest.raises(InputFormatError, match=rf"Node 6: field '{field}' must be a boolean or 0/1. Got"):
        workload_from_dict(data)


@pytest.mark.parametrize("field", ["size", "colorClass", "name"])
def test_optional_fields_absent(field: str) -> None:
    data = small_workload()
    del data["nodes"][0][field]
    node = workload_from_dict(data).graph.node(0)
    expected = {"size": ("memory", 0.0), "colorClass": ("color", None), "name": ("name", "5")}[field]
    assert getattr(node, expected[0]) == expected[1]


def test_optional_fields_null() -> None:
    data = small_workload()
    data["nodes"][0]["colorClass"] = None
    data["nodes"][0]["name"] = None
    node = workload_from_dict(data).graph.node(0)
    assert node.color is None and node.name == "5"


def test_unsupported_node_ignores_its_accelerator_time() -> None:
    data = small_workload()
    data["nodes"][1]["fpgaLatency"] = 123.0
    assert workload_from_dict(data).graph.node(1).acc_time is None


def test_node_comm_comes_from_its_edges() -> None:
    data = small_workload()
    data["nodes"].append({"id": 7, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0})
    data["edges"] += [{"sourceId": 5, "destId": 7, "cost": 2.5}, {"sourceId": 6, "destId": 7, "cost": 1.5}]
    g = workload_from_dict(data).graph
    assert g.comm.tolist() == [0.5, 1.5, 0.0]
    assert sorted(g.edges()) == [(5, 6, 0.5), (5, 7, 2.5), (6, 7, 1.5)]
    assert not g.has_uniform_edge_costs


# -- malformed workloads ---------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["id", "supportedOnFpga", "cpuLatency", "fpgaLatency", "isBackwardNode"])
@pytest.mark.parametrize("position", [0, 1])
def test_missing_required_node_field(field: str, position: int) -> None:
    data = small_workload()
    node_id = data["nodes"][position]["id"]
    del data["nodes"][position][field]
    where = f"Node at position {position}" if field == "id" else f"Node {node_id}"
    with pytest.raises(InputFormatError, match=rf"^{where} is missing the required field '{field}'\.$"):
        workload_from_dict(data)


@pytest.mark.parametrize("field", ["sourceId", "destId", "cost"])
def test_missing_required_edge_field(field: str) -> None:
    data = small_workload()
    del data["edges"][0][field]
    with pytest.raises(InputFormatError, match=rf"^Edge at position 0.* is missing the required field '{field}'\.$"):
        workload_from_dict(data)


def test_edge_errors_name_their_nodes() -> None:
    data = small_workload()
    data["edges"][0]["cost"] = "cheap"
    with pytest.raises(InputFormatError, match=r"Edge at position 0 \(5 -> 6\): field 'cost' must be a number"):
        workload_from_dict(data)


@pytest.mark.parametrize("field", ["maxSizePerFPGA", "maxFPGAs", "maxCPUs", "nodes", "edges"])
def test_missing_required_top_field(field: str) -> None:
    data = small_workload()
    del data[field]
    with pytest.raises(InputFormatError, match=rf"The workload is missing the required field '{field}'"):
        workload_from_dict(data)


@pytest.mark.parametrize(
    "field, value, kind",
    [
        ("id", "5", "an integer"), ("id", 5.5, "an integer"), ("id", True, "an integer"), ("id", None, "an integer"),
        ("cpuLatency", "2", "a number"), ("cpuLatency", None, "a number"), ("cpuLatency", True, "a number"),
        ("fpgaLatency", [1], "a number"), ("size", "3", "a number"), ("colorClass", "red", "an integer"),
        ("colorClass", 1.5, "an integer"),
    ],
)
def test_wrong_node_field_type(field: str, value: object, kind: str) -> None:
    data = small_workload()
    data["nodes"][0][field] = value
    where = f"Node {value!r}" if field == "id" else "Node 5"
    with pytest.raises(InputFormatError, match=rf"{where}: field '{field}' must be {kind}. Got"):
        workload_from_dict(data)


@pytest.mark.parametrize(
    "field, value, kind",
    [
        ("sourceId", "5", "an integer"), ("destId", 6.5, "an integer"),
        ("cost", None, "a number"), ("cost", "x", "a number"),
    ],
)
def test_wrong_edge_field_type(field: str, value: object, kind: str) -> None:
    data = small_workload()
    data["edges"][0][field] = value
    with pytest.raises(InputFormatError, match=rf"Edge at position 0.*: field '{field}' must be {kind}"):
        workload_from_dict(data)


@pytest.mark.parametrize(
    "field, value, pattern",
    [
        ("maxSizePerFPGA", "1GB", "field 'maxSizePerFPGA' must be a number"),
        ("maxFPGAs", 1.5, "field 'maxFPGAs' must be an integer"),
        ("maxCPUs", "1", "field 'maxCPUs' must be an integer"),
        ("nodes", {}, "field 'nodes' must be a list"),
        ("edges", "none", "field 'edges' must be a list"),
        ("maxFPGAs", -1, "maxFPGAs.*integer in \\[0,"),
        ("maxSizePerFPGA", -5.0, "maxSizePerFPGA.*non-negative"),
    ],
)
def test_wrong_top_field(field: str, value: object, pattern: str) -> None:
    data = small_workload()
    data[field] = value
    with pytest.raises(InputFormatError, match=pattern):
        workload_from_dict(data)


def test_entries_must_be_objects() -> None:
    data = small_workload()
    data["nodes"][1] = [6, True]
    with pytest.raises(InputFormatError, match=r"Node at position 1 must be a JSON object\. Got list"):
        workload_from_dict(data)
    data = small_workload()
    data["edges"][0] = "5->6"
    with pytest.raises(InputFormatError, match=r"Edge at position 0 must be a JSON object\. Got str"):
        workload_from_dict(data)
    with pytest.raises(InputFormatError, match=r"The workload must be a JSON object\. Got list"):
        workload_from_dict([small_workload()])


def test_graph_errors_pass_through() -> None:
    data = small_workload()
    data["edges"].append({"sourceId": 6, "destId": 5, "cost": 0.0})
    with pytest.raises(GraphError, match="cycle"):
        workload_from_dict(data)
    data = small_workload()
    data["edges"][0]["destId"] = 99
    with pytest.raises(GraphError, match="unknown destination node 99"):
        workload_from_dict(data)


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("{not json", r"is not valid JSON: .* line 1, column 2"),
        ('{"maxFPGAs": 1,}', "is not valid JSON"),
        ("", "is not valid JSON"),
    ],
)
def test_invalid_json_file(tmp_path: Path, content: str, pattern: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputFormatError, match=pattern) as info:
        read_workload(path)
    assert "bad.json" in str(info.value)


def test_missing_file_directory_and_binary(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError, match=r"Workload file .*absent.json' does not exist"):
        read_workload(tmp_path / "absent.json")
    with pytest.raises(InputFormatError, match="is a directory"):
        read_workload(tmp_path)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputFormatError, match="not UTF-8"):
        read_workload(binary)
    with pytest.raises(InputFormatError, match=r"Split file .*absent.json' does not exist"):
        read_split(tmp_path / "absent.json", Graph([Node(1, 1.0, 1.0)], []), Cluster(1))


def test_unknown_shipped_workload() -> None:
    with pytest.raises(InputFormatError, match="No shipped workload named 'nope'"):
        workload_path("nope")


# -- splits ----------------------------------------------------------------------------------------


def split_instance() -> tuple[Graph, Cluster]:
    nodes = [Node(i, 1.0, 1.0) for i in (1, 2, 3, 4)]
    return Graph(nodes, [(1, 2), (2, 3), (3, 4)]), Cluster(accelerators=2, cpus=1)


def test_split_reading(tmp_path: Path) -> None:
    g, c = split_instance()
    path = tmp_path / "split.json"
    path.write_text(json.dumps({"maxLoad": 3.0, "fpgas": [{"nodes": [1, 2], "load": 2}, {"nodes": [3]}],
                                "cpus": [{"nodes": [4]}]}))
    assert read_split(path, g, c).tolist() == [0, 0, 1, 2]
    assert read_placement(path, g, c).tolist() == [0, 0, 1, 2]


@pytest.mark.parametrize(
    "split, error, pattern",
    [
        ({"fpgas": [{"nodes": [1, 2, 99]}], "cpus": [{"nodes": [3, 4]}]},
         PlacementError, r"fpgas\[0\] lists node 99, which is not in the graph"),
        ({"fpgas": [{"nodes": [1, 2]}, {"nodes": [2]}], "cpus": [{"nodes": [3, 4]}]},
         PlacementError, r"places node 2 twice"),
        ({"fpgas": [{"nodes": [1]}, {"nodes": [2]}, {"nodes": [3, 4]}]},
         PlacementError, r"uses 3 accelerators but the cluster has 2"),
        ({"fpgas": [{"nodes": [1, 2]}], "cpus": [{"nodes": [3]}, {"nodes": [4]}]},
         PlacementError, r"uses 2 CPUs but the cluster has 1"),
        ({"fpgas": [{"nodes": [1, 2, 3]}]}, PlacementError, r"does not place node 4"),
        ({"fpgas": [{"load": 1}]}, InputFormatError, r"fpgas\[0\] is missing the required field 'nodes'"),
        ({"fpgas": [{"nodes": [1, "2"]}]}, InputFormatError, r"fpgas\[0\] lists '2', which is not a node id"),
        ({"fpgas": [{"nodes": [1, True]}]}, InputFormatError, r"fpgas\[0\] lists True"),
        ({"fpgas": {"nodes": [1]}}, InputFormatError, r"field 'fpgas' must be a list"),
        ({"fpgas": [[1, 2, 3, 4]]}, InputFormatError, r"fpgas\[0\] must be a JSON object"),
        ([1, 2], InputFormatError, r"must be a JSON object"),
    ],
)
def test_split_errors(tmp_path: Path, split: object, error: type, pattern: str) -> None:
    g, c = split_instance()
    path = tmp_path / "split.json"
    path.write_text(json.dumps(split))
    with pytest.raises(error, match=pattern) as info:
        read_split(path, g, c)
    assert "split.json" in str(info.value)


def test_empty_devices_beyond_the_cluster_are_ignored() -> None:
    g, c = split_instance()
    split = {"fpgas": [{"nodes": [1, 2]}, {"nodes": [3, 4]}, {"nodes": []}], "cpus": [{"nodes": []}, {"nodes": []}]}
    assert split_from_dict(split, g, c).tolist() == [0, 0, 1, 1]


@given(placed_instances())
def test_split_dict_round_trip(instance) -> None:
    graph, cluster, device = instance
    data = json.loads(json.dumps(split_to_dict(graph, cluster, device)))
    assert split_from_dict(data, graph, cluster).tolist() == device.tolist()


@given(training_graphs(orphans=False), clusters(), st.data())
def test_forward_split_extends_to_training_graph(graph: Graph, cluster: Cluster, data: st.DataObject) -> None:
    forward = np.flatnonzero(~graph.backward)
    classes = sorted({int(graph.color[i]) for i in forward})
    per_class = {c: data.draw(st.integers(0, cluster.num_devices - 1)) for c in classes}
    device = np.full(graph.n, -1)
    for i in forward:
        device[i] = per_class[int(graph.color[i])]
    split = split_to_dict(graph, cluster, np.where(device < 0, cluster.num_devices, device))  # backward unlisted
    extended = split_from_dict(split, graph, cluster)
    for i in range(graph.n):
        assert extended[i] == per_class[int(graph.color[i])]


def test_backward_node_without_placed_class_is_named() -> None:
    nodes = [Node(1, 1.0, 1.0, color=3), Node(2, 1.0, 1.0, color=3, backward=True), Node(9, 1.0, 1.0, backward=True)]
    g = Graph(nodes, [(1, 2), (2, 9)])
    with pytest.raises(PlacementError, match="does not place node 9, and no node of its color class is placed"):
        split_from_dict({"fpgas": [{"nodes": [1]}]}, g, Cluster(1))
    assert split_from_dict({"fpgas": [{"nodes": [1, 9]}]}, g, Cluster(1)).tolist() == [0, 0, 0]


def test_shared_expert_split_extended_to_training(shared_workloads: Path) -> None:
    w = read_workload(shared_workloads / "throughput" / "layer_resnet50_training.json")
    expert = shared_workloads / "experts" / "layer_resnet50_inference_expert.json"
    listed = {i for group in json.loads(expert.read_text())["fpgas"] for i in group["nodes"]}
    device = read_split(expert, w.graph, w.cluster)
    g = w.graph
    assert not any(int(g.ids[i]) in listed for i in np.flatnonzero(g.backward))  # backward nodes came by colour
    for c in np.unique(g.color):
        assert len(set(device[g.color == c].tolist())) == 1


# -- plan JSON --------------------------------------------------------------------------------------


PLAN_KEYS = ("objective", "status", "method", "bound", "gap", "wall_seconds", "placement", "version")


@given(placed_instances(), st.sampled_from([None, 0.0, 1.5]))
def test_plan_json(instance, bound: float | None) -> None:
    graph, cluster, device = instance
    objective = 2.0
    p = Placement(graph, cluster, device.copy(), "throughput", objective, Status.FEASIBLE, "greedy",
                  bound=bound, wall_seconds=0.25, info={"ideals": np.int64(3), "inf": math.inf})
    data = json.loads(p.to_json())
    for key in PLAN_KEYS:
        assert key in data
    assert data["version"] == PLAN_FORMAT_VERSION and data["status"] == "feasible" and data["method"] == "greedy"
    assert data["objective"] == objective and data["bound"] == bound and data["wall_seconds"] == 0.25
    assert data["gap"] == (None if bound is None else (objective - bound) / objective)
    assert data["info"]["ideals"] == 3 and data["info"]["inf"] is None
    assert [entry["id"] for entry in data["placement"]] == graph.ids.tolist()
    assert split_file_from_dict(data, graph, cluster).device.tolist() == device.tolist()


def test_plan_json_without_solution_and_infinite_objective(tmp_path: Path) -> None:
    g, c = split_instance()
    none = json.loads(Placement(g, c, None, "latency", None, Status.NO_SOLUTION, "greedy", limit="time").to_json())
    assert none["placement"] is None and none["objective"] is None and none["limit"] == "time"
    inf = Placement(g, c, np.zeros(4, dtype=np.int64), "throughput", math.inf, Status.FEASIBLE, "greedy")
    text = inf.to_json()
    assert "Infinity" not in text and json.loads(text)["objective"] is None
    path = tmp_path / "plan.json"
    path.write_text(text)
    assert read_placement(path, g, c).tolist() == [0, 0, 0, 0]


def test_plan_errors() -> None:
    g, c = split_instance()
    plan = json.loads(Placement(g, c, np.array([0, 0, 1, 2]), "throughput", 1.0, Status.FEASIBLE, "x").to_json())
    bad = copy.deepcopy(plan)
    bad["placement"][0]["device"] = "gpu7"
    with pytest.raises(PlacementError, match="puts node 1 on device 'gpu7'"):
        split_file_from_dict(bad, g, c)
    bad = copy.deepcopy(plan)
    del bad["placement"][3]
    with pytest.raises(PlacementError, match="does not place node 4"):
        split_file_from_dict(bad, g, c)
    bad = copy.deepcopy(plan)
    bad["placement"][0]["id"] = 77
    with pytest.raises(PlacementError, match="node 77, which is not in the graph"):
        split_file_from_dict(bad, g, c)


def test_unknown_top_level_fields_survive_a_round_trip() -> None:
    data = {
        "maxSizePerFPGA": 8.0, "maxFPGAs": 1, "maxCPUs": 1, "comment": "profiled on V100", "version": [1, 2],
        "nodes": [{"id": 1, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 0.5, "isBackwardNode": 0}],
        "edges": [],
    }
    written = workload_to_dict(workload_from_dict(data))
    assert written["comment"] == "profiled on V100" and written["version"] == [1, 2]


# -- unknown fields and out-of-range numbers are refused at the boundary ----------------------------


@pytest.mark.parametrize(("where", "key", "fragment"), [
    ("top", "interMachinecost", "did you mean 'interMachineCost'?"),
    ("top", "speed", "the fields are 'maxSizePerFPGA'"),
    ("node", "cpulatency", "Node 5 has an unknown field 'cpulatency' (did you mean 'cpuLatency'?)"),
    ("edge", "weight", "Edge at position 0 (5 -> 6) has an unknown field 'weight'"),
])
def test_an_unknown_field_is_refused_naming_the_nearest_known_one(where: str, key: str, fragment: str) -> None:
    data = small_workload()
    target = {"top": data, "node": data["nodes"][0], "edge": data["edges"][0]}[where]
    target[key] = 2
    with pytest.raises(InputFormatError, match=re.escape(fragment)):
        workload_from_dict(data)


def test_a_misspelt_required_field_is_named_as_unknown_first() -> None:
    data = small_workload()
    data["maxFPGA"] = data.pop("maxFPGAs")
    with pytest.raises(InputFormatError, match=re.escape("unknown field 'maxFPGA' (did you mean 'maxFPGAs'?)")):
        workload_from_dict(data)


def test_free_form_annotations_are_kept() -> None:
    data = {**small_workload(), "_profiled_on": "V100", "description": "two nodes"}
    assert workload_from_dict(data).extra == {"_profiled_on": "V100", "description": "two nodes"}


def test_published_workloads_use_only_known_fields() -> None:
    folder = Path(__file__).resolve().parents[2] / "shared" / "workloads"
    files = sorted(folder.glob("*/*.json")) + [workload_path(name) for name in shipped_workloads()]
    seen = {"top": set(), "node": set(), "edge": set()}
    for path in files:
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "nodes" in data:
            seen["top"] |= set(data)
            seen["node"] |= {key for node in data["nodes"] for key in node}
            seen["edge"] |= {key for edge in data["edges"] for key in edge}
    assert seen["top"] and seen["top"] <= set(WORKLOAD_FIELDS)
    assert seen["node"] <= set(NODE_FIELDS) and seen["edge"] <= set(EDGE_FIELDS)


def test_a_plan_or_a_split_given_as_a_workload_is_named() -> None:
    w = read_workload(workload_path("layer_bert24_inference"))
    plan = json.loads(solve(w, method="greedy").to_json())
    with pytest.raises(InputFormatError, match="is an exactplace plan"):
        workload_from_dict(plan)
    with pytest.raises(InputFormatError, match="is a split"):
        workload_from_dict({"maxLoad": 1.0, "fpgas": [], "cpus": []})


def test_unlimited_memory_reads_as_infinity_and_nan_is_refused() -> None:
    assert workload_from_dict({**small_workload(), "maxSizePerFPGA": math.inf}).cluster.max_memory == math.inf
    for bad in (math.nan, -1.0, 10**400):
        with pytest.raises(InputFormatError, match="field 'maxSizePerFPGA' must be a non-negative number"):
            workload_from_dict({**small_workload(), "maxSizePerFPGA": bad})


def test_an_inter_machine_cost_that_would_overflow_is_refused() -> None:
    data = {**small_workload(), "machines": 2, "interMachineCost": 1e308}
    with pytest.raises(InputFormatError, match=r"'interMachineCost' \(1e\+308\) must be in \[1, 1000000\]"):
        workload_from_dict(data)
    assert workload_from_dict({**data, "interMachineCost": 1e6}).cluster.inter_machine_cost == 1e6


def test_huge_integers_are_refused_in_a_short_message() -> None:
    with pytest.raises(InputFormatError, match=r"'maxFPGAs' must be an integer in \[0, 2\*\*1000\]. "
                                               r"Got an integer of 5001 digits instead"):
        workload_from_dict({**small_workload(), "maxFPGAs": 10**5000})


def test_importer_options_are_checked_before_conversion(tmp_path: Path) -> None:
    profile = tmp_path / "graph.txt"
    profile.write_text("node0 -- Linear -- forward_compute_time=1.0, backward_compute_time=1.0, "
                       "activation_size=8.0, parameter_size=4.0\n")
    assert read_workload(profile, memory=math.inf).cluster.max_memory >= 1e300  # unlimited, as documented
    for option, value in (("memory", math.nan), ("bandwidth", math.nan), ("accelerators", -1), ("training", 2)):
        with pytest.raises(ParameterError, match=f"The '{option}' parameter of read_workload must be"):
            read_workload(profile, **{option: value})
