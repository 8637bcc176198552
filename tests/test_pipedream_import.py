"""PipeDream graph.txt importer: mapping, detection, and one-line rejection of malformed files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from exactplace.core.errors import ExactplaceError, InputFormatError, ParameterError, PlacementError
from exactplace.frontends.pipedream import check_stage_file
from exactplace.io import read_workload

SHARED = Path("/work/shared/workloads/pipedream")

_F = "forward_compute_time={}, backward_compute_time={}, activation_size={}, parameter_size={}"
GOOD = (
    "node1 -- Input0 -- " + _F.format("0.000", "0.000", "8.0", "0.000") + "\n"
    "node2 -- Conv2d(3, 4) -- " + _F.format("2.000", "3.000", "[4.0; 6.0]", "5.000") + "\n"
    "node3 -- ReLU() -- " + _F.format("1.000", "1.500", "10.0", "0.000") + "\n"
    "node4 -- __getitem__(0) -- " + _F.format("0.100", "0.000", "1.0", "0.000") + "\n"
    "\tnode1 -- node2\n"
    "\tnode2 -- node3\n"
    "\tnode2 -- node4\n"
)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "graph.txt"
    p.write_text(text)
    return p


def test_training_graph_mapping(tmp_path: Path) -> None:
    w = read_workload(_write(tmp_path, GOOD), bandwidth=2.0)
    g = w.graph
    by_name = {v.name: v for v in g.nodes()}
    assert "node4" not in by_name  # unused __getitem__ sink dropped
    assert set(by_name) == {"node1", "node2", "node3", "node1.backward", "node2.backward", "node3.backward"}
    assert by_name["node1"].cpu_time == 0 and by_name["node1"].memory == 0  # input source is free
    assert by_name["node2"].acc_time == 2.0 and by_name["node2.backward"].acc_time == 3.0
    assert by_name["node2"].memory == 5.0 + 10.0  # parameters + summed list activation
    assert by_name["node2.backward"].memory == 10.0
    assert by_name["node2"].color == by_name["node2.backward"].color
    assert by_name["node2.backward"].backward and not by_name["node2"].backward
    names = {v.id: v.name for v in g.nodes()}
    edges = {(names[u], names[v]): c for u, v, c in g.edges()}
    assert edges[("node2", "node3")] == 1e3 * 10.0 / 2.0  # bytes / (bytes per second), in ms
    assert edges[("node3.backward", "node2.backward")] == 1e3 * 10.0 / 2.0
    assert edges[("node3", "node3.backward")] == 0.0


def test_inference_and_free_transfers(tmp_path: Path) -> None:
    w = read_workload(_write(tmp_path, GOOD), training=False)
    assert w.graph.n == 3 and all(c == 0 for *_, c in w.graph.edges())


def test_format_forced_and_json_options_refused(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD)
    assert read_workload(p, format="pipedream").graph.n == 6
    with pytest.raises(ExactplaceError):
        read_workload(p, format="json")
    with pytest.raises(ExactplaceError, match="ONNX"):  # not a protobuf (or, without onnx installed, unreadable)
        read_workload(p, format="onnx")
    with pytest.raises(ExactplaceError, match="format must be one of"):
        read_workload(p, format="xml")


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        (GOOD.replace("forward_compute_time=2.000", "forward_compute_time=abc"), 2, "forward_compute_time"),
        (GOOD.replace("backward_compute_time=3.000, ", ""), 2, "backward_compute_time"),
        (GOOD.replace("parameter_size=5.000", "parameter_size=-5"), 2, "parameter_size"),
        (GOOD.replace("activation_size=[4.0; 6.0]", "activation_size=[4.0; x]"), 2, "activation_size"),
        (GOOD.replace("activation_size=10.0", "activation_size=inf"), 3, "activation_size"),
        (GOOD.replace("parameter_size=0.000\nnode2", "parameter_size=0.000, colour=1\nnode2"), 1, "colour"),
        (GOOD.replace("\tnode2 -- node3", "\tnode2 -- node9"), 6, "node9"),
        (GOOD.replace("\tnode2 -- node3", "\tnode2 node3"), 6, "edge"),
        (GOOD + "node2 -- X -- forward_compute_time=1, backward_compute_time=1, activation_size=1, parameter_size=1\n",
         8, "node2"),
        (GOOD.replace("parameter_size=0.000\nnode2", "parameter_size=0.000, stage_id=one\nnode2"), 1, "stage_id"),
        (GOOD.replace("forward_compute_time=1.000, ", "forward_compute_time=1.000,, "), 3, "forward_compute_time"),
    ],
)
def test_malformed_rejected_with_line_and_field(tmp_path: Path, text: str, line: int, field: str) -> None:
    with pytest.raises(InputFormatError) as info:
        read_workload(_write(tmp_path, text), format="pipedream")
    message = str(info.value)
    assert "\n" not in message and f"Line {line}" in message and field in message


def test_cycle_rejected(tmp_path: Path) -> None:
    with pytest.raises(ExactplaceError):
        read_workload(_write(tmp_path, GOOD + "\tnode3 -- node2\n"))


@pytest.mark.skipif(not SHARED.exists(), reason="shared PipeDream profiles absent")
@pytest.mark.parametrize("model", ["vgg16", "gnmt", "resnet50"])
def test_shared_profiles_read(model: str) -> None:
    w = read_workload(SHARED / f"{model}.graph.txt")
    forward = {v.color: v for v in w.graph.nodes() if not v.backward}
    backward = {v.color: v for v in w.graph.nodes() if v.backward}
    assert forward.keys() == backward.keys() and 2 * len(forward) == w.graph.n


# --- the boundary: every PipeDream message names the profile's nodes and lines, or the option at fault ---

_LINE = re.compile(r"^(node\w+) -- ([^(\s]*)")


def _staged(text: str, stage: int = 0) -> str:
    """The profile with ``, stage_id=K`` on every node line, as PipeDream's optimizer writes a partition."""
    return "".join(f"{line}, stage_id={stage}\n" if _LINE.match(line) else f"{line}\n" for line in text.splitlines())


def _labels(text: str) -> dict[str, str]:
    """How messages should name each node of ``text``: ``node12 (Conv2d, line 4)``, read from the text itself."""
    return {m.group(1): f"{m.group(1)} ({m.group(2)}, line {number})"
            for number, line in enumerate(text.split("\n"), start=1) if (m := _LINE.match(line))}


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one stderr line of a CLI run that must exit 2 without a traceback."""
    from exactplace.cli.main import main

    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.skipif(not SHARED.exists(), reason="shared PipeDream profiles absent")
def test_stage_file_of_another_model_refused_naming_the_node(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A stage file for ResNet-50 is no split of VGG-16, and the other way round: the first node that does not
    belong is named as its file names it (or, missing from the file, as the workload names it)."""
    vgg, resnet = (SHARED / f"{m}.graph.txt" for m in ("vgg16", "resnet50"))
    for profile, other in ((vgg, resnet), (resnet, vgg)):
        stage_file = tmp_path / f"{other.name}.partitioned"
        stage_file.write_text(_staged(other.read_text()))
        ours = read_workload(profile).graph.names
        theirs = _labels(other.read_text())
        kept = [n for n in read_workload(other).graph.names if not n.endswith(".backward")]
        extra = [n for n in kept if n not in ours]
        missing = [n for n in ours if not n.endswith(".backward") and n not in theirs]
        message = _refused(capsys, "evaluate", str(profile), str(stage_file))
        assert "another graph" in message
        if extra:
            assert theirs[extra[0]] in message
        else:
            assert f"node {missing[0]}:" in message
    with pytest.raises(PlacementError, match="another graph"):
        check_stage_file(_staged(resnet.read_text()), read_workload(vgg).graph, read_workload(vgg).cluster,
                         where="The split")


@pytest.mark.parametrize(
    ("split", "names"),
    [
        (_staged(GOOD) + "node9 -- Linear(2) -- " + _F.format(1, 1, 1, 1) + ", stage_id=0\n\tnode3 -- node9\n",
         ["node9 (Linear, line 8)"]),
        (_staged(GOOD.replace("\tnode2 -- node3\n", "\tnode1 -- node3\n")),
         ["node1 (Input0, line 1)", "node3 (ReLU, line 3)"]),
        (_staged(GOOD.replace("node3 -- ReLU() -- ", "node33 -- ReLU() -- ").replace("-- node3\n", "-- node33\n")),
         ["node33 (ReLU, line 3)"]),
        (_staged(GOOD, stage=7), ["node1 (Input0, line 1)", "stage 7", "4 accelerators"]),
    ],
)
def test_stage_file_of_another_graph_refused(tmp_path: Path, capsys: pytest.CaptureFixture, split: str,
                                            names: list[str]) -> None:
    """An extra node, another edge, a renamed node, a stage past the cluster: named as the stage file does."""
    profile = _write(tmp_path, GOOD)
    stage_file = tmp_path / "partitioned.txt"
    stage_file.write_text(split)
    message = _refused(capsys, "evaluate", str(profile), str(stage_file))
    assert all(name in message for name in names) and "node 0" not in message


def test_node_missing_from_stage_file_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    profile = _write(tmp_path, GOOD)
    stage_file = tmp_path / "partitioned.txt"
    lines = _staged(GOOD).splitlines(keepends=True)
    stage_file.write_text("".join(line for line in lines if not line.startswith(("node3 ", "\tnode2 -- node3"))))
    message = _refused(capsys, "evaluate", str(profile), str(stage_file))
    assert "node node3" in message and "no line" in message


def test_byte_order_mark_and_windows_line_ends_accepted(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A profile and a stage file saved with a UTF-8 BOM (and CRLF line ends) read as without them."""
    from exactplace.cli.main import main

    plain, marked = tmp_path / "plain", tmp_path / "marked"
    plain.mkdir()
    marked.mkdir()
    for folder, encode in ((plain, lambda t: t.encode()),
                           (marked, lambda t: b"\xef\xbb\xbf" + t.replace("\n", "\r\n").encode())):
        (folder / "graph.txt").write_bytes(encode(GOOD))
        (folder / "split.txt").write_bytes(encode(_staged(GOOD, stage=1)))
    a, b = (read_workload(folder / "graph.txt").graph for folder in (plain, marked))
    assert (a.names, list(a.edges())) == (b.names, list(b.edges()))
    outputs = []
    for folder in (plain, marked):
        assert main(["evaluate", str(folder / "graph.txt"), str(folder / "split.txt")]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("value", ["1e-300", "5e-324"])
def test_bandwidth_that_overflows_transfers_is_named(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                     value: str) -> None:
    profile = _write(tmp_path, GOOD)
    message = _refused(capsys, "solve", str(profile), "--bandwidth", value)
    assert "--bandwidth" in message and f"{float(value):g}" in message
    assert not any(field in message for field in ("syncLatency", "'cost'", "fpgaLatency", "Node "))
    with pytest.raises(ParameterError, match="sync_bandwidth"):
        read_workload(profile, sync_bandwidth=float(value))


def test_cycle_names_profile_nodes_and_edge_lines(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    text = GOOD + "\tnode3 -- node2\n"
    labels = _labels(text)
    lines = [str(i) for i, line in enumerate(text.split("\n"), start=1) if line in ("\tnode2 -- node3",
                                                                                  "\tnode3 -- node2")]
    message = _refused(capsys, "info", str(_write(tmp_path, text)))
    assert f"{labels['node2']} -> {labels['node3']} -> {labels['node2']}" in message
    assert f"edge lines {', '.join(lines)}" in message
    with pytest.raises(InputFormatError):
        read_workload(_write(tmp_path, text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("\tnode", "    node"), ["Line 5", "tab"]),
        ("node1 -- Input0 -- \n", ["Line 1", "forward_compute_time is missing"]),
        ("node1 -- Input0\n" + GOOD.split("\n", 1)[1], ["Line 1", "node line"]),  # not called invalid JSON
        (GOOD.replace("Conv2d(3, 4)", "Conv\x0c2d\u2028(3, 4)").replace("=1.500", "=x"), ["Line 3"]),
        (GOOD + "node2 -- X -- " + _F.format(1, 1, 1, 1) + "\n", ["Line 8", "first on line 2"]),
        (GOOD.replace("forward_compute_time=2.000", "forward_compute_time=1e300")
         .replace("forward_compute_time=1.000", "forward_compute_time=1e300"), ["Line 3", "node3 (ReLU, line 3)"]),
        (GOOD.replace("parameter_size=5.000", "parameter_size=1.7e308"), ["Line 2", "node2 (Conv2d, line 2)"]),
    ],
)
def test_odd_profiles_named_by_line(tmp_path: Path, capsys: pytest.CaptureFixture, text: str,
                                    expected: list[str]) -> None:
    """Malformed profiles are refused in one line naming the file's line (numbered as an editor numbers them)."""
    with pytest.raises(InputFormatError):
        read_workload(_write(tmp_path, text))
    message = _refused(capsys, "info", str(_write(tmp_path, text)))
    assert all(part in message for part in expected), message
    assert "JSON" not in message and "'cpuLatency'" not in message and "'size'" not in message


def test_huge_lines_and_long_cycles_stay_short(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A 5000-digit value or a cycle through 5000 nodes is named, in a message a terminal can show."""
    huge = GOOD.replace("activation_size=10.0", "activation_size=" + "9" * 5000)
    message = _refused(capsys, "info", str(_write(tmp_path, huge)))
    assert "Line 3" in message and "activation_size" in message and len(message) < 500
    n = 5000
    ring = "".join(f"node{i} -- ReLU() -- " + _F.format(1, 1, 1, 0) + "\n" for i in range(n))
    ring += "".join(f"\tnode{i} -- node{(i + 1) % n}\n" for i in range(n))
    message = _refused(capsys, "info", str(_write(tmp_path, ring)))
    assert "cycle" in message and "node0 (ReLU, line 1)" in message and len(message) < 1000


def test_edge_line_first_is_read_as_a_profile(tmp_path: Path) -> None:
    moved = "\tnode1 -- node2\n" + GOOD.replace("\tnode1 -- node2\n", "")
    assert read_workload(_write(tmp_path, moved)).graph.names == read_workload(_write(tmp_path, GOOD)).graph.names


def test_every_reader_of_a_split_refuses_another_graphs_stage_file(tmp_path: Path) -> None:
    """Not only evaluate: the library's split reader (which compare --split and replay use) refuses it too."""
    from exactplace.io import read_split_file

    profile = _write(tmp_path, GOOD)
    stage_file = tmp_path / "partitioned.txt"
    stage_file.write_text(_staged(GOOD) + "node9 -- Linear(2) -- " + _F.format(1, 1, 1, 1) + ", stage_id=0\n"
                          "\tnode3 -- node9\n")
    w = read_workload(profile)
    with pytest.raises(PlacementError, match="another graph"):
        read_split_file(stage_file, w.graph, w.cluster)


def test_a_profile_with_a_stray_byte_is_named_as_text_at_its_line(tmp_path: Path, capsys: pytest.CaptureFixture
                                                                  ) -> None:
    """A byte that is no UTF-8 in a profile (or a JSON workload): not UTF-8 text, at its line; not "no ONNX"."""
    lines = GOOD.encode().split(b"\n")
    lines[1] = lines[1].replace(b"node2", b"node\xff2")
    profile = tmp_path / "graph.txt"
    profile.write_bytes(b"\n".join(lines))
    message = _refused(capsys, "solve", str(profile), "--method", "greedy")
    assert "is not UTF-8 text: byte 0xff at line 2" in message and "ONNX" not in message
    workload = tmp_path / "w.json"
    workload.write_bytes(b'{"maxFPGAs": 2,\n "maxCPUs": \xff1}')
    message = _refused(capsys, "solve", str(workload), "--method", "greedy")
    assert "is not UTF-8 text: byte 0xff at line 2" in message and "ONNX" not in message


def test_a_json_workload_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    from exactplace import workload_path

    text = Path(workload_path("layer_bert24_inference")).read_bytes()
    marked = tmp_path / "marked.json"
    marked.write_bytes(b"\xef\xbb\xbf" + text)
    a, b = read_workload(workload_path("layer_bert24_inference")), read_workload(marked)
    assert a.graph.names == b.graph.names and a.cluster == b.cluster


def test_a_profile_on_standard_input_reads_as_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard input holds any format a file may (it was always parsed as JSON)."""
    import io

    from exactplace.cli.inputs import load_workload

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(GOOD.encode())))
    piped = load_workload("-", {"bandwidth": 2.0})
    from_file = read_workload(_write(tmp_path, GOOD), bandwidth=2.0)
    assert piped.graph.names == from_file.graph.names and list(piped.graph.edges()) == list(from_file.graph.edges())


def test_cluster_flags_keep_the_graph_read_once(tmp_path: Path) -> None:
    """--accelerators and --memory on a profile replace its cluster; the graph is not converted again, and an
    unlimited memory stays unlimited (it came back as 1e300 through the file format)."""
    import math

    from exactplace.cli.inputs import load_workload

    path = _write(tmp_path, GOOD)
    given = load_workload(str(path), {"accelerators": 2, "memory": math.inf, "cpus": 1})
    plain = read_workload(path)
    assert given.graph is not plain.graph and given.graph.names == plain.graph.names
    assert (given.cluster.accelerators, given.cluster.cpus, given.cluster.max_memory) == (2, 1, math.inf)
    with pytest.raises(ExactplaceError, match="maxFPGAs"):
        load_workload(str(path), {"accelerators": 0, "cpus": 0})
