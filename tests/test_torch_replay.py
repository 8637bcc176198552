"""Replay of synthetic workloads (no real operators) on virtual CPU devices, and its exact model.

The timing bars: time per sample within 25% of max-load, single-sample latency within 25% of the
latency evaluator, on 3 virtual devices. On a shared 2-core machine repeats of one replay spread by a
few percent and the ratio stays close to 1, so 25% leaves ample room for noise, and one retry guards
against a scheduler stall of the shared machine.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import node_values, placed_instances

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


# Replicated stages (paper Appendix C.2): one worker per replica, samples dealt round-robin.


def replicated() -> tuple[ep.Graph, ep.Cluster, ep.Placement]:
    """A heavy first layer with little to all-reduce, then layers with much: the replicated DP gives
    the first layer 2 replicas and the others one accelerator each (4 virtual devices in all)."""
    nodes = [ep.Node(0, 20.0, 6.0, comm=0.4, sync=1.0), ep.Node(1, 20.0, 2.0, comm=0.4, sync=40.0),
             ep.Node(2, 20.0, 2.0, comm=0.3, sync=40.0), ep.Node(3, 1.0, 1.0)]
    graph, cluster = ep.Graph(nodes, [(0, 1), (1, 2), (2, 3)]), ep.Cluster(accelerators=4, cpus=1)
    placement = ep.solve(graph, cluster, method="dp", replication=True)
    assert sorted(placement.replicas[np.unique(placement.device)].tolist()) == [1, 1, 2]
    return graph, cluster, placement


def test_replicated_plan_replays_at_its_max_load() -> None:
    graph, cluster, placement = replicated()
    result = within_bar(lambda: ep.replay(graph, placement, devices="cpu", samples=16, repeats=3))
    predicted = ep.max_load(graph, cluster, placement.device, replicas=placement.replicas)
    assert result.predicted == pytest.approx(predicted) == pytest.approx(placement.objective)
    assert predicted < ep.max_load(graph, cluster, placement.device)  # the replicas are what makes it fast
    assert abs(result.ratio - 1) <= 0.25, result.to_frame()
    assert result.devices == "cpu:4"
    loads = ep.device_loads(graph, cluster, placement.device, replicas=placement.replicas).load()
    names = cluster.device_names()
    assert {name: p for name, (_, p) in result.per_device.items()} == {
        names[d]: pytest.approx(loads[d]) for d in np.unique(placement.device).tolist()}


def test_replicas_run_their_own_samples_and_pay_the_all_reduce() -> None:
    """Replica j of a stage on r runs every operation of the samples i % r == j, and only those; its
    program ends with the all-reduce, sync (r - 1) / r, so a sample costs r times the device's load."""
    from exactplace.runtime.programs import pipelined_schedule, warmup_samples

    graph, cluster, placement = replicated()
    dev = placement.device
    count = {d: int(placement.replicas[d]) if d < cluster.accelerators else 1 for d in np.unique(dev).tolist()}
    programs = device_programs(graph, cluster, dev, count)
    loads = device_loads(graph, cluster, dev, replicas=placement.replicas).load()
    for d, program in programs.items():
        assert sum(op.cost for op in program) == pytest.approx(count[d] * loads[d])
        syncs = [op for op in program if op.kind == "sync"]
        r = count[d]
        assert [op.cost for op in syncs] == ([pytest.approx(graph.sync[dev == d].sum() * (r - 1) / r)]
                                              if r > 1 else [])
    samples = 12
    schedule = pipelined_schedule(programs, samples, count)
    assert sorted(schedule) == sorted((d, j) for d, r in count.items() for j in range(r))
    for (d, j), steps in schedule.items():
        ran = [step.sample for step in steps]
        assert sorted(set(ran)) == list(range(j, samples, count[d]))
        assert all(ran.count(s) == len(programs[d]) for s in set(ran))
    # the measured window is whole rounds of the 2 replicas, after every replica's first sample
    warm = warmup_samples(samples, len(schedule), count)
    assert (samples - warm) % 2 == 0 and warm >= 2


def test_replicated_plan_needs_a_device_per_replica_and_pipelined_mode() -> None:
    graph, cluster, placement = replicated()
    replicated_name = cluster.device_name(int(np.flatnonzero(placement.replicas == 2)[0]))
    with pytest.raises(ep.PlacementError, match=rf"uses 4 devices \(a replicated stage takes one per replica: "
                                                rf"{replicated_name} x2\) but devices='cpu:3' offers 3"):
        ep.replay(graph, placement, devices="cpu:3")
    with pytest.raises(ep.ParameterError, match=r"mode='single'.*replay this replicated plan with mode='pipelined'"):
        ep.replay(graph, placement, devices="cpu", mode="single")
    three = np.where(placement.replicas == 2, 3, placement.replicas)
    # a fill of 3 samples (one round of 3 replicas), then a whole round of 3 to measure
    with pytest.raises(ep.ParameterError, match="'samples' parameter of replay must be at least 6"):
        ep.replay(graph, placement.device, cluster=cluster, replicas=three, devices="cpu", samples=5)
    with pytest.raises(ep.ParameterError, match="a Placement brings its own"):
        ep.replay(graph, placement, devices="cpu", replicas=placement.replicas)


def test_cli_replays_a_replicated_plan(tmp_path, capsys) -> None:
    import json

    from exactplace.cli.main import main

    plan = tmp_path / "plan.json"
    assert main(["solve", "layer_bert24_inference", "--method", "dp", "--option", "replication=true",
                 "--out", str(plan)]) == 0
    replicas = json.loads(plan.read_text())["replicas"]
    assert max(replicas) > 1
    needed = sum(replicas) - (len(replicas) - 1) + 1  # replicated acc0, one CPU (this plan's shape)
    capsys.readouterr()
    assert main(["replay", "layer_bert24_inference", str(plan), "--devices", "cpu", "--samples", "16",
                 "--repeats", "1", "--json"]) == 0
    last = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert last["devices"] == f"cpu:{needed}" and abs(last["ratio"] - 1) <= 0.25
    assert main(["replay", "layer_bert24_inference", str(plan), "--devices", f"cpu:{needed - 1}"]) == 2
    assert "a replicated stage takes one per replica" in capsys.readouterr().err
    assert main(["replay", "layer_bert24_inference", str(plan), "--devices", "cpu", "--mode", "single"]) == 2
    assert "mode='pipelined'" in capsys.readouterr().err


@st.composite
def replicated_instances(draw: st.DrawFn, **kwargs) -> tuple[ep.Graph, ep.Cluster, np.ndarray, np.ndarray]:
    """``(graph, cluster, device, replicas)``: random ``Node.sync`` and 1-3 replicas per accelerator."""
    graph, cluster, device = draw(placed_instances(supported=True, **kwargs))
    syncs = draw(st.lists(node_values(8.0), min_size=graph.n, max_size=graph.n))
    graph = ep.Graph([ep.Node(**{**v.__dict__, "sync": s}) for v, s in zip(graph.nodes(), syncs)], graph.edges())
    replicas = np.array(draw(st.lists(st.integers(1, 3), min_size=cluster.accelerators,
                                      max_size=cluster.accelerators)), dtype=np.int64)
    return graph, cluster, device, replicas


def replica_counts(cluster: ep.Cluster, device: np.ndarray, replicas: np.ndarray) -> dict[int, int]:
    return {d: int(replicas[d]) if d < cluster.accelerators else 1 for d in np.unique(device).tolist()}


@settings(max_examples=40, deadline=None)
@given(replicated_instances())
def test_replicated_schedule_reaches_the_replicated_max_load(instance) -> None:
    """Replicas taking the samples round-robin reach the replicated max-load in steady state (modelled
    times; over whole rounds of the replicas, as the replay measures), where the devices can be ordered
    (see test_pipelined_schedule_reaches_the_max_load)."""
    from exactplace.evaluators.feasibility import device_order_cycle
    from exactplace.runtime.programs import pipelined_schedule, warmup_samples

    graph, cluster, device, replicas = instance
    if not graph.supported[device < cluster.accelerators].all() or device_order_cycle(graph, device):
        return
    count = replica_counts(cluster, device, replicas)
    samples = 72
    schedule = pipelined_schedule(device_programs(graph, cluster, device, count), samples, count)
    done = [0.0] * samples
    for steps in schedule.values():
        for step in steps:
            done[step.sample] = max(done[step.sample], step.start + step.op.cost)
    warm = max(12, warmup_samples(samples, len(schedule), count))
    warm += (samples - warm) % 6  # whole rounds of replicas 1-3
    rate = (done[-1] - done[warm - 1]) / (samples - warm)
    assert rate == pytest.approx(ep.max_load(graph, cluster, device, replicas=replicas), rel=0.05, abs=1e-9)


@settings(max_examples=25, deadline=None)
@given(replicated_instances(min_accelerators=1, max_cpus=0))
def test_cuda_orchestration_of_replicas_on_stand_in_gpus(instance) -> None:
    """The CUDA path gives every replica its own GPU and times each on its own clock: on streams that take
    exactly the modelled times it measures the replicated max-load, where the devices can be ordered (on
    a cycle the schedule converges more slowly than 48 samples, see
    test_pipelined_schedule_reaches_the_max_load; 1,500 ordered instances all passed)."""
    from exactplace.evaluators.feasibility import device_order_cycle
    from exactplace.runtime.cuda import replay_cuda

    graph, cluster, device, replicas = instance
    if not graph.supported[device < cluster.accelerators].all() or device_order_cycle(graph, device):
        return
    count = replica_counts(cluster, device, replicas)
    predicted = ep.max_load(graph, cluster, device, replicas=replicas)
    result = replay_cuda(graph, cluster, device, mode="pipelined", samples=48, repeats=1, time_unit=1.0,
                         predicted=predicted, expected=dict.fromkeys(count, 0.0), kernels=FakeGpus(sum(count.values())),
                         replicas=count)
    assert result.measured == pytest.approx(predicted, rel=0.05, abs=1e-9)
    assert result.devices == f"cuda:{sum(count.values())}"
    with pytest.raises(ep.PlacementError, match="one per replica"):
        replay_cuda(graph, cluster, device, mode="pipelined", samples=48, repeats=1, time_unit=1.0,
                    predicted=predicted, expected={}, kernels=FakeGpus(sum(count.values()) - 1), replicas=count)


def test_pipelined_schedule_leaves_the_garbage_collector_as_it_was() -> None:
    """The schedule is built with the collector paused (no full collections over its steps) and resumed after."""
    import gc

    from exactplace.runtime.programs import Op, pipelined_schedule

    programs = {0: [Op("compute", 1.0, 0), Op("send", 0.0, 7, (1,))], 1: [Op("recv", 0.0, 7), Op("compute", 2.0, 1)]}
    assert gc.isenabled()
    assert len(pipelined_schedule(programs, 50)[1, 0]) == 100 and gc.isenabled()
    gc.disable()
    try:
        pipelined_schedule(programs, 5)
        assert not gc.isenabled()
    finally:
        gc.enable()
