"""A primal improvement phase ("polish") for the non-contiguous max-load IP.

The non-contiguous IP (:func:`~exactplace.formulations.throughput.noncontiguous_ip`) proves good bounds quickly,
but its solver finds good placements late. :func:`polish` improves a placement (the warm start, the DP's chain
optimum) by exact re-optimization of small device sets: moving classes among the devices of a set ``S`` changes
only the loads of ``S``, so the best placement of the classes on ``S`` with every other class fixed is a small
assignment IP, solved exactly (the equations: :func:`polish`'s Notes). A better one is taken, which lowers the
sorted load vector lexicographically (no cycling). :class:`Alongside` runs the search in a thread of its own,
beside a solve that leaves a core idle. Its tuning: :class:`PolishSettings`.

GPipe's objective (max forward + max backward load) does not decompose this way: ``method="mip"`` does not
polish under ``gpipe``.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ExactplaceError
from exactplace.core.graph import Graph
from exactplace.core.interrupt import ctrl_c_sets, sets_at_most
from exactplace.core.placement import Limit, Status
from exactplace.evaluators import check_feasibility
from exactplace.evaluators.max_load import device_loads
from exactplace.formulations.model import Kind, Model
from exactplace.formulations.throughput import UnitData, fits_accelerator, unit_data
from exactplace.solvers import Request, solve_model

__all__ = ["DEFAULT_POLISH", "Alongside", "PolishSettings", "Polished", "polish"]


@dataclasses.dataclass(frozen=True)
class PolishSettings:
    """The polish's tuning (:data:`DEFAULT_POLISH`; pass another to :func:`polish` or :class:`Alongside`)."""

    sub_seconds: float = 0.15
    """At most this many seconds for one neighbourhood's sub-IP: short sub-IPs reach good splits sooner, and a
    search that needs longer ones doubles the limit (``escalate``)."""
    restart_seconds: float = 30.0
    """:class:`Alongside` takes an offered start once its search has gone this long without improving."""
    improvement: float = 1e-7
    """A neighbourhood's new placement is taken when its max load is at least this fraction below the old."""


#: The polish's default tuning.
DEFAULT_POLISH = PolishSettings()


@dataclasses.dataclass(frozen=True)
class Polished:
    """The polished placement (``device``, node position -> device), its max load (the evaluator's), the
    start's, how many neighbourhoods were solved and improved (:class:`Alongside`: over all its searches, and the
    improvements of the best so far), why the search ended (``"local optimum"``: every neighbourhood proven without
    an improving placement; ``"stalled"``: a sweep found none within :attr:`PolishSettings.sub_seconds` each;
    ``"time"``; ``"enough"``: :func:`polish`'s ``enough`` reached; ``"interrupted"``: Ctrl-C or ``cancel``;
    ``"stopped"``: the gap probe beside it proved the gap, :func:`~exactplace.bounds.gap_probe.probe_beside_polish`),
    and its seconds."""

    device: np.ndarray
    value: float
    start: float
    solved: int
    improved: int
    ended: str
    seconds: float
    trace: tuple[tuple[float, float], ...] = ()
    """(seconds, max load) after each improvement."""
    starts: int = 1
    """Searches run, from the start and from each offer taken (:class:`Alongside`)."""

    @property
    def interrupted(self) -> bool:
        """Ctrl-C or ``cancel`` ended the search."""
        return self.ended == "interrupted"


def polish(graph: Graph, cluster: Cluster, device: np.ndarray, *, overlap: bool = False,
           time_limit: float = 5.0, solver: str = "highs", threads: int = 1,
           cancel: threading.Event | None = None, escalate: bool = False,
           on_improve: Callable[[float], None] | None = None, searches: int = 1,
           enough: float | None = None, settings: PolishSettings = DEFAULT_POLISH) -> Polished:
    """Improve a placement whose colour classes each sit on one device by exact re-optimization of device
    pairs and triples (Notes) within ``time_limit`` seconds; never worse than ``device``.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    device : array of int
        A legal placement (classes together, memory respected, unsupported nodes on CPU cores).
    overlap : bool
        Communication overlapped with compute (an accelerator's load is max(compute, communication)).
    time_limit : float
        Seconds for the whole search.
    solver : str
        The solver adapter for the sub-IPs.
    threads : int
        Worker threads of each sub-IP.
    cancel : threading.Event, optional
        Set it to stop the search (it returns the best placement so far). Ctrl-C sets it too (on the main
        thread).
    escalate : bool
        After a sweep that stalls (some sub-IP undecided), sweep again with twice the sub-IP limit
        instead of ending (Notes): for a search with a core of its own and minutes to spend.
    on_improve : callable, optional
        Called with the new max load after each improvement (from the thread the search runs in).
    searches : int
        Searches from ``device`` at once, each on a core of its own (the sub-IPs release the interpreter lock)
        with its own solver seed: the best of them is returned. Where a search ends depends on which undecided
        sub-IP found what, so several land apart, and the best of several is often well ahead of one.
    enough : float, optional
        Stop every search once one has a max load at most this (``ended == "enough"``): say, a value a proven
        bound certifies.
    settings : PolishSettings
        The sub-IPs' time limit and the improvement a new placement must bring.

    Returns
    -------
    Polished
        Re-scored by the evaluator (:func:`~exactplace.evaluators.max_load.device_loads`), never taken from a
        sub-IP's objective.

    Notes
    -----
    Let ``y`` put every colour class ``u`` on a device ``d(u)`` and let ``S`` be a set of devices. The
    load of an accelerator ``j`` is

    .. math::

        \\ell_j = \\sum_{u: d(u) = j} \\frac{t_u}{s_j}
                 + \\sum_{g} c_g \\, [\\exists\\, v \\in \\{s_g\\} \\cup T_g:\\ [d(v) = j] \\ne [d(s_g) = j]]

    (``t_u`` the class's accelerator time, ``s_j`` the speed, ``c_g`` the cost of communication group
    ``g`` with source class ``s_g`` and target classes ``T_g``: a device pays a group once when it holds
    the source but not every target, or a target but not the source); a CPU core's load is its
    classes' CPU time. Moving classes among the devices of ``S`` changes only the loads of ``S``: for
    ``j \\notin S`` the indicator ``[d(v) = j]`` of every class is unchanged. So the best placement of
    the classes on ``S`` with every other class fixed is the small assignment IP

    .. math::

        \\min L \\quad\\text{s.t.}\\quad \\sum_{j \\in S} y_{uj} = 1,\\quad
        e_{gj} \\ge \\pm (y_{s_g j} - y_{tj}) \\;(t \\in T_g),\\quad
        L \\ge \\sum_u \\frac{t_u}{s_j} y_{uj} + \\sum_g c_g e_{gj},\\quad
        \\sum_u m_u y_{uj} \\le M_j \\qquad (j \\in S),

    over the classes ``u`` now on ``S`` (a class off ``S`` has ``y_{uj} = 0``, a constant; with
    ``overlap`` the compute and communication sums are bounded by ``L`` separately). Its optimum
    ``L^*`` is the least possible max load over ``S``, exactly; when ``L^*`` is below the current
    maximum over ``S`` the new placement is taken.

    Search: let ``a`` be a device of maximum load. Pairs ``{a, b}`` are tried, ``b`` from the least
    loaded up, then triples ``{a, b, c}`` (``b, c`` the least loaded first); the first that improves is
    taken and the sweep starts again. ``L``'s upper bound is the current maximum over ``S`` less
    ``settings.improvement`` (relative), so a sub-IP only looks for improving placements and an infeasible one
    proves there is none. Every sub-IP has at most ``settings.sub_seconds``; a sweep that improves nothing ends
    the search (``"local optimum"`` when every sub-IP was decided, else ``"stalled"``), as does
    ``time_limit``. With ``escalate`` a stalled sweep starts again with twice the sub-IP limit, until
    ``time_limit`` or a local optimum. The sub-IPs run on HiGHS without a hint (the current placement lies outside
    a sub-IP whose ``L`` is below its max load), and identical devices of ``S`` are interchangeable in them: the
    rank fixings of the full IP (its docstring proves them valid) are applied to them.

    Examples
    --------
    >>> from exactplace import read_workload, workload_path, solve
    >>> w = read_workload(workload_path("layer_bert24_training"))
    >>> start = solve(w, method="dp").device
    >>> p = polish(w.graph, w.cluster, start, time_limit=5.0)
    >>> p.value < p.start
    True
    >>> two = polish(w.graph, w.cluster, start, time_limit=5.0, searches=2, enough=p.start)
    >>> two.ended, two.value <= p.start
    ('enough', True)
    """
    clock = time.monotonic()
    device = np.asarray(device, dtype=np.int64).copy()
    loads = _loads(graph, cluster, device, overlap)
    start = float(loads.max())
    halt = threading.Event()  # a search reached `enough`: the others end after their sub-IP
    record = _Record(start, clock, None if enough is None else sets_at_most(enough, halt))

    def improved(value: float) -> None:
        """The best of every search so far: its trace, ``on_improve``, and ``enough``."""
        if record.improve(value) and on_improve is not None:
            on_improve(value)
    # Ctrl-C sets the event the searches stop on: a sub-IP it reaches may still end optimal, with no interrupt mark.
    with ctrl_c_sets(cancel) as stop:
        data = unit_data(graph, graph.color)
        search = _Search(graph, cluster, data, _allowed(data, cluster), _kinds(cluster), device, loads, overlap,
                         clock + time_limit, solver, threads, escalate, stop, halt, improved, settings)
        outcomes: dict[int, _Searched | Exception] = {}

        def run(seed: int) -> None:
            try:
                outcomes[seed] = search.run(seed)
            except Exception as error:  # re-raised below, in the caller's thread
                outcomes[seed] = error

        others = [threading.Thread(target=run, args=(seed,), name="exactplace-polish", daemon=True)
                  for seed in range(1, max(1, searches))]
        for other in others:
            other.start()
        run(0)
        for other in others:  # (no KeyboardInterrupt here: Ctrl-C sets `stop`, on which every search ends)
            other.join()
    found: list[_Searched] = []
    for outcome in outcomes.values():
        if isinstance(outcome, Exception):
            raise outcome
        found.append(outcome)
    winner = min(found, key=lambda result: result.value)
    ended = "interrupted" if stop.is_set() else "enough" if halt.is_set() else winner.ended
    trace = record.trace()
    return Polished(winner.device, winner.value, start, sum(result.solved for result in found), len(trace), ended,
                    time.monotonic() - clock, trace)


class _Record:
    """The lowest max load over searches running in several threads, the trace of its improvements (seconds from
    ``clock``); ``heard`` is told each value recorded (the start first)."""

    def __init__(self, start: float, clock: float, heard: Callable[[float], None] | None) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._heard = heard
        self._trace: list[tuple[float, float]] = []
        self.best = start
        """The lowest so far: one float, replaced whole, so readable from any thread at any time."""
        self.improve(start)  # (only to tell `heard`, which may stop on the start already)

    def improve(self, value: float) -> bool:
        """Record a search's new max load; whether it is the lowest so far."""
        if self._heard is not None:
            self._heard(value)
        with self._lock:
            if value >= self.best:
                return False
            self.best = value
            self._trace.append((time.monotonic() - self._clock, value))
            return True

    def trace(self) -> tuple[tuple[float, float], ...]:
        """(seconds, max load) at each improvement so far."""
        with self._lock:
            return tuple(self._trace)


class _Searched(NamedTuple):
    """One search's end: its placement, max load, sub-IPs solved, why it ended (:class:`Polished`'s words)."""

    device: np.ndarray
    value: float
    solved: int
    ended: str


@dataclasses.dataclass(frozen=True)
class _Search:
    """What :func:`polish`'s searches share: the instance (its classes, the devices each may go on, which devices are
    interchangeable), the start and its loads, the deadline, the events they stop on (``stop``: Ctrl-C or the caller's
    cancel, also the sub-IPs' cancel; ``halt``: ``enough`` reached), the callback each improvement goes to and the
    tuning."""

    graph: Graph
    cluster: Cluster
    data: UnitData
    allowed: np.ndarray
    kinds: np.ndarray
    device: np.ndarray
    loads: np.ndarray
    overlap: bool
    deadline: float
    solver: str
    threads: int
    escalate: bool
    stop: threading.Event
    halt: threading.Event
    improved: Callable[[float], None]
    settings: PolishSettings

    def run(self, seed: int) -> _Searched:
        """One search from the start, with sub-IPs on solver seed ``seed``."""
        graph, cluster, overlap, deadline = self.graph, self.cluster, self.overlap, self.deadline
        data, allowed, kinds, device, loads = self.data, self.allowed, self.kinds, self.device, self.loads
        unit_device = device[np.unique(data.unit, return_index=True)[1]]  # the device of each class's first node
        solved = 0
        ended = "time"
        sub_seconds = self.settings.sub_seconds
        improvement = self.settings.improvement

        def stopped() -> bool:
            return time.monotonic() >= deadline or self.stop.is_set() or self.halt.is_set()

        while not stopped():
            undecided = False
            for neighbourhood in _neighbourhoods(loads):
                if stopped():
                    break
                S = list(neighbourhood)
                sub_ip = _solve_sub(data, cluster, allowed, kinds, unit_device, neighbourhood,
                                    float(loads[S].max()), overlap, self.solver, self.threads,
                                    min(deadline, time.monotonic() + sub_seconds), self.stop, seed, improvement)
                solved += 1
                undecided |= not sub_ip.decided
                if sub_ip.interrupted:
                    break  # (the adapter stopped on the event: the sweeps end too)
                if sub_ip.found is None:
                    continue
                candidate = sub_ip.found[data.unit]
                new = _loads(graph, cluster, candidate, overlap)
                # The evaluator's loads, with half the sub-IP's margin for its rounding; and its memory check: the
                # solver's feasibility tolerance can let a memory row through slightly over.
                if (new[S].max() < loads[S].max() * (1 - improvement / 2)
                        and not check_feasibility(graph, cluster, candidate)):
                    device, unit_device, loads = candidate, sub_ip.found, new
                    self.improved(float(loads.max()))
                    break
            else:  # a sweep without improvement
                if self.escalate and undecided and 2 * sub_seconds < deadline - time.monotonic():
                    sub_seconds *= 2  # (a sub-IP the solver fails on stays undecided: the doubling ends it)
                    continue
                ended = "stalled" if undecided else "local optimum"
                break
        return _Searched(device, float(loads.max()), solved, ended)


class Alongside:
    """:func:`polish` with ``escalate`` in a thread of its own, beside a solve that leaves a core idle (HiGHS's
    branch-and-bound runs on one): start it, run the solve, then :meth:`stop` it for what it found.

    Restarts: the solve beside it may :meth:`offer` other starts (the device-set bound offers roundings of its
    master's solutions). The latest offer is taken once the search has gone
    :attr:`PolishSettings.restart_seconds` without improving (or has ended, at a local optimum); the best placement
    of all the searches is kept. (A local optimum of the pairs and triples depends on its start, so other starts
    reach other local optima.)

    >>> from exactplace import read_workload, workload_path, solve
    >>> w = read_workload(workload_path("layer_bert24_training"))
    >>> companion = Alongside(w.graph, w.cluster, solve(w, method="dp").device, time_limit=60.0)
    >>> found = companion.stop()  # at once: what it has so far, never worse than the start
    >>> found.value <= found.start
    True
    """

    def __init__(self, graph: Graph, cluster: Cluster, device: np.ndarray, *, overlap: bool = False,
                 time_limit: float, heard: Callable[[float], None] | None = None,
                 settings: PolishSettings = DEFAULT_POLISH) -> None:
        """``heard``: told the max load of each placement the searches find (the start's first): say,
        :func:`~exactplace.core.interrupt.sets_at_most`, to stop a solve beside it once one is good enough.
        ``settings``: the searches' tuning, and when an offer is taken."""
        self._settings = settings
        self._cancel = threading.Event()  # stop(): the end of every search
        self._box: dict[str, object] = {}
        self._started = time.monotonic()
        self._start_value = float(_loads(graph, cluster, device, overlap).max())
        self._record = _Record(self._start_value, self._started, heard)
        self._lock = threading.Lock()
        self._offered: np.ndarray | None = None
        self._search_cancel = threading.Event()  # the current search's: set by stop(), or to take an offer
        self._idle_since = self._started  # the current search's start or last improvement

        def improved(value: float) -> None:
            self._idle_since = time.monotonic()  # (one float, replaced whole)
            self._record.improve(value)

        def search() -> None:
            try:
                self._box["found"] = self._searches(graph, cluster, device, overlap, time_limit, improved)
            except Exception as error:  # re-raised by stop(), in the caller's thread
                self._box["error"] = error

        self._thread = threading.Thread(target=search, name="exactplace-polish-alongside", daemon=True)
        self._thread.start()

    def _searches(self, graph: Graph, cluster: Cluster, device: np.ndarray, overlap: bool, time_limit: float,
                  improved: Callable[[float], None]) -> Polished:
        """Polish the start, then each offer taken, until ``time_limit`` or :meth:`stop`: the best of them."""
        deadline = self._started + time_limit
        best: Polished | None = None
        solved = starts = 0
        start = np.asarray(device, dtype=np.int64)
        while start is not None:
            with self._lock:
                self._search_cancel = threading.Event()
                if self._cancel.is_set():
                    break
            starts += 1
            improved(float(_loads(graph, cluster, start, overlap).max()))  # (an offer may be better as it is)
            found = polish(graph, cluster, start, overlap=overlap, time_limit=max(0.0, deadline - time.monotonic()),
                           cancel=self._search_cancel, escalate=True, on_improve=improved, settings=self._settings)
            solved += found.solved
            if best is None or found.value < best.value:
                best = found
            start = None
            while not self._cancel.is_set() and time.monotonic() < deadline:
                with self._lock:
                    start, self._offered = self._offered, None
                if start is not None or found.ended not in ("local optimum", "stalled"):
                    break
                self._cancel.wait(min(1.0, max(0.0, deadline - time.monotonic())))  # ended: wait for an offer
            if found.ended == "time" or self._cancel.is_set():
                break
        if best is None:  # stopped before the first search
            best = polish(graph, cluster, device, overlap=overlap, time_limit=0.0, settings=self._settings)
        trace = self._record.trace()
        ended = "interrupted" if self._cancel.is_set() else best.ended
        return dataclasses.replace(best, start=self._start_value, solved=solved, improved=len(trace), ended=ended,
                                   seconds=time.monotonic() - self._started, trace=trace, starts=starts)

    @property
    def started(self) -> float:
        """Its ``time.monotonic()`` start (its trace's seconds count from there)."""
        return self._started

    def best(self) -> float:
        """The max load of its best placement so far (the start's until it improves), while it runs."""
        return self._record.best

    def offer(self, device: np.ndarray) -> None:
        """Another legal start (node position -> device), from any thread: it replaces an earlier offer not yet
        taken, and is taken once the search has gone :attr:`PolishSettings.restart_seconds` without improving."""
        with self._lock:
            self._offered = np.asarray(device, dtype=np.int64).copy()
            if time.monotonic() - self._idle_since >= self._settings.restart_seconds:
                self._search_cancel.set()

    def stop(self) -> Polished:
        """Stop the search and return its best placement (``ended`` is ``"interrupted"`` when it was still
        going); an error the search raised is raised here."""
        with self._lock:
            self._cancel.set()
            self._search_cancel.set()
        self._thread.join()
        if "error" in self._box:
            raise self._box["error"]  # type: ignore[misc]
        found = self._box["found"]
        assert isinstance(found, Polished)
        return found


def _loads(graph: Graph, cluster: Cluster, device: np.ndarray, overlap: bool) -> np.ndarray:
    """Every device's load, as the evaluator scores it."""
    return device_loads(graph, cluster, device, overlap=overlap).load()


class _SubResult(NamedTuple):
    """A sub-IP's outcome: the new class -> device array (None: no improving placement found), whether the
    solver proved it best or proved that none exists, and whether Ctrl-C / ``cancel`` stopped it."""

    found: np.ndarray | None
    decided: bool
    interrupted: bool


def _kinds(cluster: Cluster) -> np.ndarray:
    """(D,): a number per device, equal for interchangeable devices (accelerators of one type; CPU cores)."""
    kinds = np.full(cluster.num_devices, -1, dtype=np.int64)
    for t, group in enumerate(cluster.accelerator_types()):
        kinds[group] = t
    return kinds


def _allowed(data: UnitData, cluster: Cluster) -> np.ndarray:
    """(U, D): the devices each class may go on (accelerators: supported and fitting alone; CPU cores: any)."""
    k = cluster.accelerators
    allowed = np.ones((data.units, cluster.num_devices), dtype=bool)
    allowed[:, :k] = fits_accelerator(data, cluster.memory_limit)
    return allowed


def _neighbourhoods(loads: np.ndarray) -> list[tuple[int, ...]]:
    """Device sets to re-optimize, in order: a most loaded device with each other (least loaded first),
    then with each pair of others."""
    order = np.argsort(loads, kind="stable")
    top = int(order[-1])
    rest = [int(d) for d in order[:-1]]
    return [(top, b) for b in rest] + [(top, b, c) for b, c in itertools.combinations(rest, 2)]


def _solve_sub(data: UnitData, cluster: Cluster, allowed: np.ndarray, kinds: np.ndarray, unit_device: np.ndarray,
               devices: tuple[int, ...], current: float, overlap: bool, solver: str, threads: int,
               deadline: float, cancel: threading.Event | None, seed: int, improvement: float) -> _SubResult:
    """The best placement of the classes on ``devices`` (:func:`polish`'s sub-IP) with a max load at least
    ``improvement`` (relative) below ``current``, as far as the solver got by ``deadline`` (on solver seed
    ``seed``)."""
    k = cluster.accelerators
    S = np.asarray(sorted(devices), dtype=np.int64)
    free = np.flatnonzero(np.isin(unit_device, S))
    if not len(free):
        return _SubResult(None, True, False)
    local = np.full(data.units, -1, dtype=np.int64)
    local[free] = np.arange(len(free))
    m = Model("polish: classes of a device set")
    ub = allowed[np.ix_(free, S)].copy()
    # Symmetry: identical devices of S are interchangeable in the sub-IP; the i-th heaviest free class
    # goes only on the first i + 1 of each such set (as in the full IP, whose docstring proves it valid).
    rank = np.empty(len(free), dtype=np.int64)
    rank[np.argsort(-(data.acc[free].sum(axis=1) + data.cpu[free].sum(axis=1)), kind="stable")] = np.arange(len(free))
    for kind in np.unique(kinds[S]):
        for position, slot in enumerate(np.flatnonzero(kinds[S] == kind).tolist()):
            ub[rank < position, slot] = False
    y = m.add_vars((len(free), len(S)), ub=ub.reshape(-1).astype(float), kind=Kind.INTEGER, name="y")
    m.add_rows("assignment", len(free), lb=1.0, ub=1.0, rows=np.repeat(np.arange(len(free)), len(S)),
               cols=y.reshape(-1), vals=1.0)
    acc_slots = np.flatnonzero(S < k)
    # Pairs (group, target) touching a free class; their groups get e[g, slot] for each accelerator in S.
    source = data.group_source[data.pair_group]
    touch = (local[source] >= 0) | (local[data.pair_target] >= 0)
    groups, pair_group = np.unique(data.pair_group[touch], return_inverse=True)
    e = m.add_vars((len(groups), len(acc_slots)), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="e")
    if len(groups) and len(acc_slots):
        s_loc, t_loc = local[source[touch]], local[data.pair_target[touch]]
        for column, slot in enumerate(acc_slots.tolist()):
            for lead, other in ((s_loc, t_loc), (t_loc, s_loc)):
                # e >= y_lead - y_other (y of a fixed class is 0): needed only where the lead class is free.
                idx = np.flatnonzero(lead >= 0)
                both = np.flatnonzero(other[idx] >= 0)
                n = len(idx)
                m.add_rows(f"crossing {slot}", n, lb=0.0,
                           rows=np.concatenate([np.arange(n), np.arange(n), both]),
                           cols=np.concatenate([e[pair_group[idx], column], y[lead[idx], slot],
                                                y[other[idx[both]], slot]]),
                           vals=np.concatenate([np.ones(n), -np.ones(n), np.ones(len(both))]))
    # Only improving placements: L below the current maximum over S (an infeasible sub-IP proves there is none).
    L = m.add_vars(1, ub=current * (1 - improvement), name="L")
    for slot, d in enumerate(S.tolist()):
        if d < k:
            compute = data.acc[free].sum(axis=1) / float(cluster.speed[d])
            column = int(np.flatnonzero(acc_slots == slot)[0])
            comm_cols, comm_vals = e[:, column], data.group_cost[groups]
        else:
            compute = data.cpu[free].sum(axis=1)
            comm_cols, comm_vals = np.zeros(0, np.int64), np.zeros(0)
        if overlap:
            _at_most_l(m, f"compute {d}", L, y[:, slot], compute)
            _at_most_l(m, f"communication {d}", L, comm_cols, comm_vals)
        else:
            _at_most_l(m, f"load {d}", L, np.concatenate([y[:, slot], comm_cols]), np.concatenate([compute, comm_vals]))
        if d < k and np.isfinite(cluster.memory_limit[d]) and data.memory[free].sum() > cluster.memory_limit[d]:
            m.add_rows(f"memory {d}", 1, ub=float(cluster.memory_limit[d]), rows=np.zeros(len(free), np.int64),
                       cols=y[:, slot], vals=data.memory[free])
    m.minimize(L, [1.0])
    # No hint: the current placement is outside the model (L is below its max load).
    try:
        out = solve_model(m, solver, Request(deadline=deadline, rel_gap=0.0, threads=threads, cancel=cancel,
                                             isolate=False, seed=seed))
    except ExactplaceError:
        # HiGHS can end a small sub-IP in an error status (L's bound just below the current load): the
        # neighbourhood stays undecided, the search goes on.
        return _SubResult(None, False, False)
    decided = out.status in (Status.OPTIMAL, Status.INFEASIBLE)
    if out.values is None:
        return _SubResult(None, decided, out.limit is Limit.INTERRUPT)
    found = unit_device.copy()
    found[free] = S[np.argmax(out.values[y], axis=1)]
    return _SubResult(found, decided, out.limit is Limit.INTERRUPT)


def _at_most_l(m: Model, name: str, L: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
    """The row ``sum vals * x[cols] <= L``."""
    n = len(cols)
    m.add_rows(name, 1, ub=0.0, rows=np.zeros(n + 1, np.int64), cols=np.concatenate([cols, L]),
               vals=np.concatenate([np.asarray(vals, float), [-1.0]]))
