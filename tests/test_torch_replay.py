"""Replay of synthetic workloads (no real operators) on virtual CPU devices, and its exact model.

The timing bars (issue 11): time per sample within 25% of max-load, single-sample latency within 25%
of the latency evaluator, on 3 virtual devices. Noise measured on the 2-core CI machine under a load
average of 4-9 (other agents): repeats of one replay spread by 1-3% and the ratio stayed within
0.99-1.02 (benchmarks/RESULTS.md, "Replay"); 25% is the issue's bar, and one retry guards against a
scheduler stall of the shared machine.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import placed_instances

import exactplace as ep
from exactplace.evaluators import device_loads
from exactplace.evaluators.latency import latency
from exactplace.runtime.programs import device_programs, latency_blocks

pytest.importorskip("torch")


def synthetic() -> tuple[ep.Graph, ep.Cluster, np.ndarray]:
    """12 nodes with a few skip edges; the exact DP spreads them over 2 accelerators and 1 CPU."""
    rng = np.random.default_rng(0)
    nodes = [ep.Node(i, float(rng.uniform(2, 6)), float(rng.uniform(0.5, 2)), comm=float(rng.uniform(0.1, 0.5)))
             for i in range(12)]
    edges = [(i, i + 1) for i in range(11)] + [(0, 3), (4, 7), (6, 9)]
    graph, cluster = ep.Graph(nodes, edges), ep.Cluster(accelerators=2, cpus=1)
    placement = ep.solve(graph, cluster, method="dp")
    return graph, cluster, placement.device


def within_bar(run, attempts: int = 2) -> ep.runtime.ReplayResult:
    for _ in range(attempts):
        result = run()
        if abs(result.ratio - 1) <= 0.25:
            break
    return result


@pytest.mark.parametrize("mode", ["pipelined", "single"])
def test_replay_on_three_virtual_devices_matches_the_evaluator(mode: str) -> None:
    graph, cluster, device = synthetic()
    assert len(set(device.tolist())) == 3
    result = within_bar(lambda: ep.replay(ep.Workload(graph, cluster), device, devices="cpu:3", mode=mode,
                                          samples=16 if mode == "pipelined" else 6, repeats=3))
    expected = ep.max_load(graph, cluster, device) if mode == "pipelined" else latency(graph, cluster, device)
    assert result.predicted == pytest.approx(expected)
    assert abs(result.ratio - 1) <= 0.25, result.to_frame()
    frame = result.to_frame()
    assert list(frame.columns) == ["measured", "predicted", "ratio"]
    assert set(frame.index) == {"acc0", "acc1", "cpu0", "overall"}
    assert result.to_dict()["ratio"] == result.ratio and result.devices == "cpu:3"


def test_too_few_devices_is_a_clear_error() -> None:
    graph, cluster, device = synthetic()
    with pytest.raises(ep.PlacementError, match="uses 3 devices but devices='cpu:2' offers 2"):
        ep.replay(graph, device, cluster=cluster, devices="cpu:2")
    with pytest.raises(ep.ParameterError, match="'mode' parameter of replay"):
        ep.replay(graph, device, cluster=cluster, devices="cpu", mode="batch")
    with pytest.raises(ep.ParameterError, match="'devices' parameter of replay"):
        ep.replay(graph, device, cluster=cluster, devices="tpu:2")


def test_unsupported_node_on_an_accelerator_is_refused() -> None:
    graph = ep.Graph([ep.Node(1, 1.0, None), ep.Node(2, 1.0, 1.0)], [(1, 2)])
    with pytest.raises(ep.PlacementError, match="Node 1 cannot run on an accelerator but is placed on acc0"):
        ep.replay(graph, [0, 1], cluster=ep.Cluster(2, cpus=1), devices="cpu")


@settings(max_examples=40)
@given(placed_instances())
def test_device_programs_cost_exactly_the_max_load_model(instance) -> None:
    """What the workers execute per sample is, op for op, the evaluator's load of each device."""
    graph, cluster, device = instance
    if not np.all(np.isfinite(ep.device_loads(graph, cluster, device).load())):
        return
    loads = device_loads(graph, cluster, device).load()
    for d, program in device_programs(graph, cluster, device).items():
        assert sum(op.cost for op in program) == pytest.approx(loads[d])
        assert [op.item for op in program if op.kind == "compute"] == [
            v for v in graph.topological_order.tolist() if device[v] == d]


@settings(max_examples=40)
@given(placed_instances())
def test_latency_blocks_simulate_to_the_latency_evaluator(instance) -> None:
    """Blocks run as soon as the blocks they wait for end, for the sum of their ops: that is §4's latency."""
    graph, cluster, device = instance
    if not np.all(np.isfinite(ep.device_loads(graph, cluster, device).load())):
        return
    try:
        expected = latency(graph, cluster, device)
    except ep.PlacementError:
        with pytest.raises(ep.PlacementError):
            latency_blocks(graph, cluster, device)
        return
    end: list[float] = []
    for block in latency_blocks(graph, cluster, device):
        end.append(max((end[b] for b in block.after), default=0.0) + sum(op.cost for op in block.ops))
    assert max(end) == pytest.approx(expected)


def test_cli_replay_ends_with_json(tmp_path, capsys) -> None:
    import json

    from exactplace.cli.main import main

    plan = tmp_path / "plan.json"
    assert main(["solve", "layer_bert24_inference", "--method", "dp", "--out", str(plan)]) == 0
    capsys.readouterr()
    assert main(["replay", "layer_bert24_inference", str(plan), "--devices", "cpu", "--samples", "6",
                 "--repeats", "1", "--json"]) == 0
    out = capsys.readouterr().out.splitlines()
    last = json.loads(out[-1])
    assert {"measured", "predicted", "ratio"} <= set(last) and last["predicted"] > 0
    assert any(line.startswith("overall") for line in out)
    assert main(["replay", "layer_bert24_inference", str(plan), "--devices", "cpu:1"]) == 2
    assert "offers 1" in capsys.readouterr().err


def test_replay_measures_execution_not_the_formula() -> None:
    """Devices that send while they could compute: the replay runs copies and compute one after the
    other, so it disagrees with the overlap model (max of the two) and agrees with the default (sum)."""
    graph = ep.Graph([ep.Node(1, 9.0, 1.0, comm=2.0), ep.Node(2, 9.0, 1.0)], [(1, 2)])
    cluster = ep.Cluster(accelerators=2, cpus=0)
    result = within_bar(lambda: ep.replay(graph, [0, 1], cluster=cluster, devices="cpu:2", samples=12, repeats=2))
    assert result.predicted == ep.max_load(graph, cluster, [0, 1]) == 3.0
    assert abs(result.ratio - 1) <= 0.25
    assert result.measured / ep.max_load(graph, cluster, [0, 1], overlap=True) > 1.25  # overlap predicts 2.0


class _Event:
    def __init__(self, t: float) -> None:
        self.t = t

    def synchronize(self) -> None:
        pass


class _Buffer:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class FakeGpus:
    """Stand-in for CudaKernels: each stream is a clock that runs its enqueued work in order."""

    def __init__(self, count: int) -> None:
        self.count, self.time = count, [0.0] * count

    def event(self, g: int) -> _Event:
        return _Event(self.time[g])

    def _run(self, g: int, seconds: float) -> tuple[_Event, _Event]:
        start = self.event(g)
        self.time[g] += seconds
        return start, self.event(g)

    def compute(self, g: int, seconds: float) -> tuple[_Event, _Event]:
        return self._run(g, seconds)

    def buffers(self, g: int, seconds: float) -> tuple[_Buffer, _Buffer]:
        return _Buffer(seconds), _Buffer(seconds)

    def download(self, g: int, payload: _Buffer, host: _Buffer) -> tuple[_Event, _Event]:
        return self._run(g, payload.seconds)

    def upload(self, g: int, host: _Buffer, wait: _Event) -> tuple[_Event, _Event]:
        self.wait(g, wait)
        return self._run(g, host.seconds)

    def wait(self, g: int, event: _Event) -> None:
        self.time[g] = max(self.time[g], event.t)

    def synchronize(self) -> None:
        self.time = [max(self.time)] * self.count

    @staticmethod
    def elapsed(start: _Event, end: _Event) -> float:
        return end.t - start.t


@settings(max_examples=25)
@given(placed_instances(supported=True, min_accelerators=1, max_cpus=0))
def test_cuda_orchestration_on_stand_in_gpus(instance) -> None:
    """The CUDA path (not run in CI: no GPU) enqueues each device's schedule in order, each receive
    after its send; on streams that take exactly the modelled times it measures the evaluators' values
    (training graphs included: devices interleave samples as PipeDream does)."""
    from exactplace.runtime.cuda import replay_cuda

    graph, cluster, device = instance
    if not graph.supported[device < cluster.accelerators].all():
        return
    try:
        expected_latency = latency(graph, cluster, device)
    except ep.PlacementError:
        return
    used = len(set(device.tolist()))
    for mode, predicted in (("pipelined", ep.max_load(graph, cluster, device)), ("single", expected_latency)):
        result = replay_cuda(graph, cluster, device, mode=mode, samples=48, repeats=1, time_unit=1.0,
                             predicted=predicted, expected={d: 0.0 for d in set(device.tolist())},
                             kernels=FakeGpus(used))
        # single: exact; pipelined: the steady rate of 48 samples, within 5% of the asymptotic max-load
        assert result.measured == pytest.approx(predicted, rel=0.05 if mode == "pipelined" else 1e-9)
        assert result.devices == f"cuda:{used}"


@settings(max_examples=40)
@given(placed_instances(supported=True))
def test_pipelined_schedule_reaches_the_max_load(instance) -> None:
    """Work-conserving devices interleaving samples reach one sample per max-load in steady state,
    for inference and training graphs alike (the schedule's modelled times, no clock involved),
    when the devices can be ordered (no two wait on each other). Where they cannot, the
    lowest-sample-first policy can leave the bottleneck idle (found by hypothesis: two CPUs, a
    training graph whose forward and backward parts cross between them both ways, max-load
    14.25, 15.19 per sample over 48 samples and still 14.43 over 400)."""
    from exactplace.evaluators.feasibility import device_order_cycle
    from exactplace.runtime.programs import pipelined_schedule

    graph, cluster, device = instance
    if not graph.supported[device < cluster.accelerators].all() or device_order_cycle(graph, device):
        return
    samples = 48
    schedule = pipelined_schedule(device_programs(graph, cluster, device), samples)
    done = [0.0] * samples
    for steps in schedule.values():
        assert [step.start for step in steps] == sorted(step.start for step in steps)
        for step in steps:
            done[step.sample] = max(done[step.sample], step.start + step.op.cost)
    rate = (done[-1] - done[11]) / (samples - 12)
    assert rate == pytest.approx(ep.max_load(graph, cluster, device), rel=0.05, abs=1e-9)
