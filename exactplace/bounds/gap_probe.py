"""The gap probe of the non-contiguous max-load IP: prove the asked gap directly.

With a split of max load ``U`` and an asked relative gap ``g``, :func:`probe_gap` asks the decision version of the
IP (:func:`~exactplace.formulations.throughput.noncontiguous_ip` with ``at_most``): "is there a split of max load at
most ``T``?", ``T = U (1 - g + h)`` a hair above ``U (1 - g)`` (``h``: :attr:`GapProbeSettings.headroom`).
Refuted: ``T`` (less CP-SAT's worst rounding) bounds every split, and ``U`` is within ``g`` of the optimum. Found:
a split ``g`` better becomes the incumbent and the next probe asks below it. Undecided in its time: the optimizing
IP goes on. A fine gap is approached by a ladder of coarser ones first (:attr:`GapProbeSettings.ladder`); a
refuted coarse rung is a bound the optimizing IP starts from.

Why a decision is easier: the objective's upper bound turns every device's load row into a knapsack row the solver
propagates from the first node on, where the optimizing search must first lift its bound by cuts and branching.
Near the optimum the decision is as hard as the optimization, so the probe gets a bounded slice of the time
(``method="mip"``'s option ``gap_probe``).
"""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.core.interrupt import ctrl_c_sets
from exactplace.core.placement import Status
from exactplace.evaluators.max_load import max_load
from exactplace.formulations.throughput import noncontiguous_ip
from exactplace.improvers.polish import DEFAULT_POLISH, Polished, PolishSettings, polish
from exactplace.solvers import Request, solve_model
from exactplace.solvers.cpsat import refutation_margin

__all__ = ["DEFAULT_GAP_PROBE", "GapProbeSettings", "Probe", "probe_beside_polish", "probe_gap"]


@dataclasses.dataclass(frozen=True)
class GapProbeSettings:
    """The gap probe's tuning (:data:`DEFAULT_GAP_PROBE`; pass another to :func:`probe_gap`)."""

    ladder: tuple[float, ...] = (0.01,)
    """The gaps asked before the requested one, coarsest first: a coarse gap is refuted far sooner than a fine one,
    and its refutation is a bound the optimizing IP starts from when the requested gap stays undecided."""
    headroom: float = 1e-7
    """The threshold sits this fraction of ``U`` above ``U (1 - g)``, so that the proven bound (the threshold less
    CP-SAT's rounding, far smaller) still closes the gap ``g``."""


#: The gap probe's default tuning.
DEFAULT_GAP_PROBE = GapProbeSettings()


@dataclasses.dataclass(frozen=True)
class Probe:
    """What the probes gave: ``outcome`` (``"proven"``: ``bound`` is within the asked gap of ``value``;
    ``"undecided"``: the time ran out first, though a coarser gap's ``bound`` may be proven;
    ``"interrupted"``: Ctrl-C or ``cancel``), the best split (``device``, the start's unless a probe
    found a better one) and its evaluated ``value``, the highest bound the probes proved (None: none
    above ``lower_bound``), how many probes found a better split, and the seconds spent."""

    outcome: str
    device: np.ndarray
    value: float
    bound: float | None
    found: int
    seconds: float
    trace: tuple[tuple[float, float, float | None], ...] = ()
    """(seconds, value, bound) after each probe that decided (bound: the highest proven then, or None)."""


def probe_gap(graph: Graph, cluster: Cluster, device: np.ndarray, rel_gap: float, *, overlap: bool = False,
              gpipe: bool = False, lower_bound: float | None = None, time_limit: float = 5.0, threads: int = 1,
              cancel: threading.Event | None = None, settings: GapProbeSettings = DEFAULT_GAP_PROBE) -> Probe:
    """Decide "is any split ``g`` better than the incumbent?" on CP-SAT for each gap ``g`` of the ladder
    (``settings.ladder`` coarser than ``rel_gap``, then ``rel_gap``), within ``time_limit`` seconds (module
    docstring). A split found becomes the incumbent and the same gap is asked again; a refutation
    raises the bound and the next gap is asked; an undecided probe ends the ladder.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    device : array of int
        A legal split (node position -> device), the incumbent.
    rel_gap : float
        The gap to prove, in [0, 1) (0: only the ladder's coarser gaps are asked).
    overlap, gpipe : bool
        The objective variant.
    lower_bound : float, optional
        A proven lower bound (the packing bound), passed on to the decision IPs.
    time_limit : float
        Seconds for all probes together.
    threads : int
        CP-SAT workers (one often decides sooner than several: its default search, without the others' overhead).
    cancel : threading.Event, optional
        Set it to stop (the result is then ``"interrupted"``). Ctrl-C sets it too (on the main thread).
    settings : GapProbeSettings
        The ladder of gaps and the threshold's headroom.

    Examples
    --------
    >>> from exactplace import read_workload, workload_path, solve
    >>> w = read_workload(workload_path("op_bert3_inference"))
    >>> best = solve(w, method="mip", contiguous=False, time_limit=30)
    >>> probe = probe_gap(w.graph, w.cluster, best.device, 0.001, time_limit=10)
    >>> probe.outcome, probe.bound >= 0.999 * probe.value
    ('proven', True)
    """
    # Ctrl-C sets the event every probe stops on (a probe it stops may still end proven infeasible, unmarked).
    with ctrl_c_sets(cancel) as stop:
        return _ladder(graph, cluster, device, rel_gap, overlap, gpipe, lower_bound, time_limit, threads, stop,
                       settings)


def _ladder(graph: Graph, cluster: Cluster, device: np.ndarray, rel_gap: float, overlap: bool, gpipe: bool,
            lower_bound: float | None, time_limit: float, threads: int, cancel: threading.Event,
            settings: GapProbeSettings) -> Probe:
    """The probes of :func:`probe_gap`, each stopped by ``cancel``."""
    clock = time.monotonic()
    deadline = clock + time_limit
    device = np.asarray(device, dtype=np.int64)
    value = _value(graph, cluster, device, overlap, gpipe)
    bound = lower_bound
    found, trace = 0, []
    gaps = [g for g in settings.ladder if g > rel_gap] + ([rel_gap] if rel_gap > 0 else [])
    outcome = "undecided"
    while gaps and time.monotonic() < deadline - 0.05 and not cancel.is_set():
        threshold = value * (1.0 - gaps[0] + settings.headroom)
        if not threshold < value or (bound is not None and value - bound <= gaps[0] * value):
            gaps.pop(0)  # no gap of this size is left to ask about (or it is proven already)
            continue
        ip = noncontiguous_ip(graph, cluster, overlap=overlap, gpipe=gpipe, lower_bound=bound, at_most=threshold)
        # In this process: CP-SAT looks at its stop flag and clock throughout, and a child would cost a large share
        # of a probe that takes seconds (its interpreter, imports and the model's translation there).
        out = solve_model(ip.model, "cpsat", Request(deadline=deadline, rel_gap=1.0, threads=threads,
                                                      cancel=cancel, isolate=False))
        if out.status is Status.INFEASIBLE:  # (a proof, even where Ctrl-C came during it: the loop then ends)
            bound = max(bound if bound is not None else -np.inf, threshold - refutation_margin(ip.model))
            trace.append((time.monotonic() - clock, value, bound))
            gaps.pop(0)
            continue
        if cancel.is_set():
            break
        if out.values is None:
            break  # undecided in its time: a finer gap would be harder still
        candidate = ip.decode(out.values)
        better = _value(graph, cluster, candidate, overlap, gpipe)
        if not better < value:  # the solver's rounding let a split at the threshold through
            break
        device, value, found = candidate, better, found + 1
        trace.append((time.monotonic() - clock, value, bound))
    if cancel.is_set():
        outcome = "interrupted"
    proven = bound is not None and (lower_bound is None or bound > lower_bound)
    if outcome != "interrupted" and proven and value - bound <= rel_gap * value:
        outcome = "proven"
    return Probe(outcome, device, value, bound if proven else None, found, time.monotonic() - clock, tuple(trace))


def probe_beside_polish(graph: Graph, cluster: Cluster, device: np.ndarray, rel_gap: float, *, overlap: bool = False,
                        lower_bound: float | None = None, polish_seconds: float, probe_seconds: float,
                        settings: GapProbeSettings = DEFAULT_GAP_PROBE,
                        polish_settings: PolishSettings = DEFAULT_POLISH) -> tuple[Polished, Probe]:
    """The polish of ``device`` (:func:`~exactplace.improvers.polish.polish`, on this thread) and the probes (CP-SAT
    with one worker, in a thread of their own) at once, on two cores: (the polish, the probes with the better split
    of the two).

    The probes first ask the ladder's coarsest gap from ``device`` itself. A refutation bounds every split, so when
    it closes ``rel_gap`` the polish is stopped (``ended == "stopped"``): a start that is already optimal is
    certified without waiting for its polish to find nothing. The question is dropped once the polish finds a split
    below its threshold (the start was far from a local optimum, where the polish answers sooner). When the polish
    has ended, the rest of the ladder is asked from the better split, within what is left of ``probe_seconds``.
    Ctrl-C stops both (the probes then end ``"interrupted"``, with the better split so far). ``settings`` and
    ``polish_settings``: the probes' and the polish's tuning.
    """
    start = _value(graph, cluster, device, overlap, False)  # (no GPipe: the polish does not decompose it)
    coarse = max([g for g in settings.ladder if g > rel_gap] + [rel_gap])
    give_up_below = start * (1.0 - coarse)  # a polished split this low answers the first question
    probe_stop, polish_stop, proven = threading.Event(), threading.Event(), threading.Event()
    done = threading.Event()
    box: dict[str, object] = {}

    def probing() -> None:
        try:
            first = _ladder(graph, cluster, device, coarse, overlap, False, lower_bound, probe_seconds, 1, probe_stop,
                            settings)
            box["probe"] = first
            if first.outcome == "proven" and first.value - first.bound <= rel_gap * first.value:
                proven.set()
                polish_stop.set()  # (after `proven`: the polish's end reads it)
        except Exception as error:  # re-raised in the caller's thread
            box["error"] = error
        finally:
            done.set()

    def improved(value: float) -> None:
        if value < give_up_below:
            probe_stop.set()

    thread = threading.Thread(target=probing, name="exactplace-gap-probe", daemon=True)
    thread.start()
    try:
        polished = polish(graph, cluster, device, overlap=overlap, time_limit=polish_seconds, cancel=polish_stop,
                          on_improve=improved, settings=polish_settings)
        interrupted = polished.interrupted and not proven.is_set()  # (the probes' proof stops it too)
    except KeyboardInterrupt:  # (outside its search, which keeps the start)
        polished = Polished(np.asarray(device, dtype=np.int64), start, start, 0, 0, "interrupted", 0.0)
        interrupted = True
    # Waiting on an Event, not in Thread.join: a KeyboardInterrupt inside join can leave the thread looking finished.
    while not done.is_set():
        if interrupted:
            probe_stop.set()
        try:
            done.wait(0.1)
        except KeyboardInterrupt:
            interrupted = True
    thread.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    first = box["probe"]
    assert isinstance(first, Probe)
    if proven.is_set():
        polished = dataclasses.replace(polished, ended="stopped")
    found = first
    if not (interrupted or proven.is_set() or first.outcome == "undecided"):  # (undecided: its time ran out)
        left = probe_seconds - first.seconds
        better = polished.device if polished.value < first.value else first.device
        if left > 0.05:
            rest = probe_gap(graph, cluster, better, rel_gap, overlap=overlap,
                             lower_bound=first.bound if first.bound is not None else lower_bound, time_limit=left,
                             settings=settings)
            interrupted = rest.outcome == "interrupted"
            found = Probe(rest.outcome, rest.device, rest.value, rest.bound if rest.bound is not None else first.bound,
                          first.found + rest.found, first.seconds + rest.seconds,
                          first.trace + tuple((first.seconds + t, v, b) for t, v, b in rest.trace))
    # The better split of the two, and the outcome for it.
    device, value = (polished.device, polished.value) if polished.value < found.value else (found.device, found.value)
    closed = found.bound is not None and value - found.bound <= rel_gap * value
    outcome = "interrupted" if interrupted else "proven" if closed else "undecided"
    return polished, dataclasses.replace(found, outcome=outcome, device=device, value=value)


def _value(graph: Graph, cluster: Cluster, device: np.ndarray, overlap: bool, gpipe: bool) -> float:
    return float(max_load(graph, cluster, device, overlap=overlap, gpipe=gpipe))
