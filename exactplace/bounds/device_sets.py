"""A proven lower bound on the non-contiguous max load by column generation over device sets.

The relaxation and why a refutation is a proof: :mod:`exactplace.formulations.device_sets`; the pricing
dynamic program: ``dp_native/set_pricing.hpp`` (:class:`Pricer`). :func:`set_bound` refutes thresholds ``T``, "no split
has max load ``<= T``", by generating columns until Farley's bound exceeds ``k`` (refuted: ``T`` is a
lower bound of every split) or the relaxation is seen to hold a solution of value ``<= k`` ("converged": it
cannot refute ``T``): the restricted master's value once no artificial column is in its solution (an upper
bound on the relaxation's: its columns are a solution), at the latest when no column prices out. The
restricted master is an LP on HiGHS, with one artificial column per class (cost ``k + 1``) so that it is
always feasible; the refutation never rests on it, only on Farley's bound, which needs nothing but the
duals and the two exact pricings. So the master may first *cover* the classes (rows ``>= 1``: a split's sets are a
cover too) and hand over to the partition (rows ``= 1``) only near ``k`` (:data:`COVERING_FIRST`): a cover's solutions
improve by overlapping sets, a partition's only by sets that fit together exactly, and on the held-out BERT-12
training graph that made a threshold's generation many times faster.

First (:func:`heaviest_bound`): one accelerator of any split holds at least its share of the accelerator time, and
the least load of a set that heavy, communication included (a MIP), is a bound every split reaches; it is the
threshold to start from where being that heavy costs communication (on the held-out BERT-12 training graph it lies
well above the packing bound); its MIP stops once it meets a set that heavy within the bound given (seconds on the
shared layer graphs, longer on the held-out InceptionV3 graphs, where it proves nothing).

Thresholds: while the target (``U (1 - rel_gap)`` for the best split ``U``: its refutation certifies ``U``)
is more than :data:`APPROACH` above the highest refuted threshold, halfway between them (each a bound
proven on the way: the target's own generation may run to the end of the time limit without refuting
it); then the target itself; once a threshold converges at or below the target, a bisection between the
highest refuted threshold and the lowest converged one (the relaxation's limit, the most it can prove). A
threshold neither refuted nor converged within :data:`PATIENCE` of the time limit is left undecided, and the
next ones lie halfway below it.
Branching (``branch``, on by default): at the limit, the relaxation alone proves no more; a branch-and-price
(Ryan and Foster) decides a threshold beyond it, at the target or, when ``rel_gap`` is positive, at
``L / (1 - rel_gap)`` for the highest refuted ``L`` when that is lower (a split found there is certified at once; a
refutation raises ``L`` and the next tree lies a step higher). A node's master solution that is fractional has a
pair of classes on one device in some of its columns and on two in others; one branch keeps the pair together (one
merged class in the pricing), the other apart (the DP's own constraint); a node is closed by Farley's bound over its
pricing, exactly as the root. A node whose master solution is integral is a split within the threshold (the
evaluator re-scores it and checks its memory, which the relaxation does not sum). Depth first, the likelier branch
first, the pair the nearest in the pricing's order among the most fractional (a pair apart is open in the DP from one
to the other); children start from their parent's duals; a node still undecided after :data:`NODE_PATIENCE` of the
time is put off until the others are decided.
Diving (:func:`_dive`): at a tree's first fractional node, before its children, the master's columns are fixed one
device at a time (the largest fractional column with every column of value 1; the next largest where that fails) and
the generation run again, until a master is integral: a split within the threshold, often found in seconds where the
pairs' branching takes minutes or meets none (``benchmarks/bench_dive.py``, layer_resnet50_inference). A failed dive
proves nothing.
Starts for a local search (``offer``): each converged master solution, at the root and in the branches, rounded to
a legal split (:func:`_rounded_split`); the relay's polish beside the bound restarts from them.
Columns carry over: all of them up a threshold, those within it down. Duals are smoothed (Wentges: a
weight on the duals of the best Farley bound so far), with the master's own duals when the smoothed
ones price out nothing; the weight adapts after each pricing (:func:`_adapted_weight`, Pessoa et al.'s automatic
smoothing), which beats a fixed weight 1/2 on the ResNet-50 layer graphs (``benchmarks/bench_smoothing.py``).
A generation's first center is the packing bound's duals (:func:`_work_center`, its Farley bound known
without an accelerator pricing), not the first master's (``bench_smoothing.py --against center``): a generation
refutes or converges sooner from it on the layer graphs. Except where a CPU core's pricing near that point runs past
its cap (:data:`LEAVE_PACKING_CENTER`): its values there are accelerator times over ``T``, and on the operator graphs,
whose CPU times are many times the accelerator's, the knapsack keeps every subset sum, no bound beats the point's and
every pricing near it is slow; the master's duals take over (``--against keep``: much faster on op_bert6_inference,
the ResNet-50 layer graphs unchanged). Every pricing gets the generation's deadline (its DP stops there), a pricing at
smoothed duals at most :data:`SMOOTHED_PRICING_SLACK` times the last one (then the master's duals are priced).
While an exact pricing costs more than :data:`GREEDY_WHEN` master solves (branchy graphs), a
greedy cover (:meth:`Pricer.cover`: up to ``k`` disjoint sets, each greedy on the classes the others left) joins the
DP's best sets, and up to :data:`GREEDY_ROUNDS` masters in a row are priced by the cover alone (no bound from those:
Farley's needs the exact maximum); on LayerGraphs_inceptionv3_inference (326 classes, 6 accelerators) the master's
value then falls far faster than from the DP's best sets alone.

Where it pays: on the ResNet-50 layer graphs the relaxation's limit lies just below the best split known and above
what HiGHS's bound on the assignment IP reaches in ten minutes; with branching, and the relay's polish restarting
from the offered roundings, both are certified to 1e-4 within a ten-minute relay.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.core.placement import Limit, TracePoint
from exactplace.evaluators import check_feasibility, max_load
from exactplace.formulations.device_sets import LOAD_TOLERANCE, SetRelaxation, frontier_order, lightest_heavy_set

__all__ = ["Pricer", "SetBound", "heaviest_bound", "set_bound", "set_bound_applies"]

#: Weight of the best duals so far in the smoothed duals a pricing is asked at, at first (then adapted:
#: :func:`_adapted_weight`).
SMOOTHING = 0.5

#: The most the smoothing's weight rises to (at 1 the pricing would be asked at the center again and again).
SMOOTHING_CAP = 0.99

#: The share of the time limit :func:`set_bound`'s first step, :func:`heaviest_bound`, may take (its MIP takes tens of
#: seconds on OperatorGraphs_bert_L-12_training, a few at most on the shared workloads).
HEAVIEST_SHARE = 0.1

#: :func:`heaviest_bound` takes HiGHS's dual bound ``b`` this much lower, times ``1 + |b|`` (relative, and absolute
#: for loads near 0), below its tolerances (1e-7 on feasibility and on the duals; on a load of 0 with a group of
#: cost 6e-8 HiGHS's bound was 6e-8): what it refutes must hold for the exact loads.
HEAVIEST_MARGIN = 1e-6

#: A generation's first center is the packing bound's point of the dual (:func:`_work_center`); False: the first
#: master's duals (``benchmarks/bench_smoothing.py --against center`` compares the two).
PACKING_CENTER = True

#: The packing bound's point is given up as the center once a CPU core's pricing near it runs past its cap
#: (:func:`_refute`); False: it stays the center (``benchmarks/bench_smoothing.py --against keep`` compares the two).
LEAVE_PACKING_CENTER = True

#: A generation's master covers the classes (rows ``>= 1``, duals ``>= 0``) until its value nears ``k``
#: (:data:`COVER_ROOM`) or no column prices out, then partitions them (rows ``= 1``: the relaxation itself) from
#: the columns met; False: it partitions from the start (``benchmarks/bench_smoothing.py --against partition``
#: compares the two). Why: Farley's bound holds at any duals, and a split's sets are a cover
#: too, so the covering master's duals refute as soundly, and its solutions are far easier to improve (a set near the
#: threshold may overlap another, where a partition needs the rest of that set as its own column, within the
#: threshold, communication included). On OperatorGraphs_bert_L-12_training the partitioning master refuted a
#: threshold only at its convergence, many times later than the covering one.
COVERING_FIRST = True

#: The covering master hands over to the partitioning one once its value is within this of ``k`` (relative; at once
#: when no column prices out).
COVER_ROOM = 0.01

#: Bytes one pricing's DP may hold (its fronts and their trace back), then it stops as at its deadline: duals of
#: nearly one value per time leave its fronts unpruned, and on the held-out OperatorGraphs_bert_l-6_training a pricing
#: at the smoothed duals grew until the process was killed for memory, where the slowest pricings that end
#: (LayerGraphs_inceptionv3_inference's near its relaxation's limit) hold under a gigabyte.
PRICING_MEMORY = 2 * 2**30

#: A pricing at the smoothed duals may take this many times the last exact pricing (at least a second; the very
#: first pricing is at the master's own duals), then the weight falls to 0 and the master's own duals are priced: near
#: the packing bound's duals (the first center) values nearly proportional to times leave the DP's fronts unpruned
#: (OperatorGraphs_bert_L-12_training: one such pricing ran for minutes, where the master's duals price in under a
#: second).
SMOOTHED_PRICING_SLACK = 10.0

#: At smoothed duals the CPU cores' exact pricing gets this many seconds, then their fractional knapsack stands in
#: for it (:func:`_refute`).
CPU_PRICING_SECONDS = 0.2

#: Columns a pricing adds at most (the best sets of its final Pareto front).
COLUMNS_PER_PRICING = 10

#: Master solves priced greedily (:meth:`Pricer.cover`, at the master's duals) while that finds improving columns,
#: before an exact pricing (Farley's bound, smoothed duals) is due again.
GREEDY_ROUNDS = 10

#: The greedy cover is used (as columns beside an exact pricing's, and alone for :data:`GREEDY_ROUNDS`) only while the
#: last exact pricing took more than this many master solves: on layer_resnet50_inference (milliseconds a pricing)
#: greedy rounds left the first threshold undecided after 100 s where the exact pricing alone refutes it in seconds.
GREEDY_WHEN = 5.0

#: A refutation needs Farley's bound above ``k`` by at least this (floating-point sums of duals).
MARGIN = 1e-7

#: A pair's share of one device counts as 0 or 1 within this (the master's solution, HiGHS's tolerance).
FRACTIONAL = 1e-6

#: A branch node's generation is put off (to be taken up again, with four times the patience, once every other node
#: is decided) after this share of the branching's time: near the threshold's own limit a node's generation tails off
#: (minutes, on layer_resnet50_inference), while the split sought may lie in the next node.
NODE_PATIENCE = 0.05

#: A branch-and-price's dive (:func:`_dive`, from its first fractional node) may take this share of the branching's
#: time.
DIVE_PATIENCE = 0.2

#: A dive's fractional columns tried at each level, the largest first (:func:`_dive`).
DIVE_WIDTH = 2

#: A dive runs at most this many times ``k + l`` generations (a threshold below the optimum refutes every path).
DIVE_DEPTHS = 2

#: Branching pairs: the nearest in the pricing's order among those whose share of one device is this close to the
#: most fractional one's distance from 0 and 1.
NEAR_SPREAD = 0.1

#: The artificial columns' cost rises tenfold, up to this multiple of ``k + 1``, while the master's optimum rests on
#: them.
ARTIFICIAL_COST_CAP = 1e6

#: The bisection ends when the refuted and the converged thresholds are this close (relative).
RESOLUTION = 1e-6

#: A threshold's generation is left undecided after this share of the time limit; the next thresholds lie below it.
#: When not even the first threshold is decided by then, the bound gives up (the relay's HiGHS leg gets the time).
#: (In the relay, on OperatorGraphs_bert_L-12_training and the InceptionV3 layer graphs, thresholds stay undecided
#: however long they run: without this, nothing is proven and HiGHS's leg is the poorer for it.)
PATIENCE = 0.25

#: The target itself is tried once the highest refuted threshold is within this of it (relative); until then,
#: halfway to it. (Refutations below the relaxation's limit take a few generations each once columns carry over;
#: a threshold above it is only given up at convergence, the slowest way a generation ends.)
APPROACH = 1e-3


@dataclasses.dataclass(frozen=True)
class SetBound:
    """What :func:`set_bound` proved.

    ``value``: the highest refuted threshold (a lower bound on every split's max load), None when none
    was refuted. ``ceiling``: the lowest threshold the relaxation could not refute without branching (None: none
    converged; ``value`` lies above it when branching refuted more). ``outcome``: ``"target refuted"``,
    ``"limit reached"`` (refuted and converged thresholds within :data:`RESOLUTION`, then branching, if on, ended
    without deciding), ``"undecided"`` (the first threshold neither refuted nor converged within
    :data:`PATIENCE`: it gave up early, nothing proven beyond ``heaviest``), ``"time"`` or ``"interrupted"``. ``trace``:
    (seconds since the start, bound) at each refutation, branching's included. ``split``: the best split
    branching found (node position -> device; None: none), ``split_value`` its max load (the evaluator's);
    ``nodes``: branch nodes solved; ``dives``: generations in dives (:func:`_dive`); ``heaviest``: the threshold
    :func:`heaviest_bound` refuted first (None: nothing above ``lower``)."""

    value: float | None
    ceiling: float | None
    outcome: str
    trace: tuple[tuple[float, float], ...]
    thresholds: int
    pricings: int
    columns: int
    seconds: float
    split: np.ndarray | None = None
    split_value: float | None = None
    nodes: int = 0
    dives: int = 0
    heaviest: float | None = None


def set_bound_applies(graph: Graph, cluster: Cluster, *, overlap: bool = False, gpipe: bool = False) -> str | None:
    """Why the device-set relaxation does not apply to the instance (None: it does)."""
    if gpipe or overlap:
        return "GPipe's and overlapped loads are not sums over a device's set"
    if not cluster.is_homogeneous or cluster.is_two_level:
        return "it takes one machine of identical accelerators"
    if cluster.accelerators == 0:
        return "no accelerators"
    return None


class Pricer:
    """``max pi(S)`` over the class sets within a threshold: the C++ dynamic program of
    ``dp_native/set_pricing.hpp`` (exact above the floor asked for; the GIL released, Ctrl-C honoured).

    ``time``: each class's time; ``allowed``: classes that may be in a set; ``group_cost`` and ``members``:
    the communication groups (none for a CPU core: a plain knapsack); ``order``: the classes' processing order
    (:func:`~exactplace.formulations.device_sets.frontier_order` keeps the DP's states few); ``apart``: pairs of
    classes no set may hold both of.

    >>> from exactplace import read_workload, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> sets = SetRelaxation.of(w.graph, w.cluster)
    >>> pricer = Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, frontier_order(sets))
    >>> value, found = pricer.price(np.full(sets.classes, 0.2), threshold=17.7147)
    >>> bool(value > 1.0), all(sets.load(s) <= 17.7147 + 1e-9 for s in found)
    (True, True)
    """

    def __init__(self, time: np.ndarray, allowed: np.ndarray, group_cost: np.ndarray,
                 members: tuple[np.ndarray, ...] | list[np.ndarray], order: np.ndarray,
                 apart: tuple[tuple[int, int], ...] = ()) -> None:
        from exactplace.native import load

        self._native = load().SetPricer(**_native_instance(time, allowed, group_cost, members, order, apart))
        self._time, self._allowed = np.asarray(time, dtype=np.float64), np.asarray(allowed, dtype=bool)

    def price(self, duals: np.ndarray, threshold: float, floor: float = 1.0, keep: int = 10,
              raise_floor: bool = True, deadline: float = np.inf,
              cancel: threading.Event | None = None) -> tuple[float, list[np.ndarray]]:
        """``(max pi(S), sets)``: the maximum when it exceeds ``floor`` (else ``floor``: no set exceeds it),
        and up to ``keep`` sets (bool per class) of value above ``floor``, best first. Loads within
        :data:`~exactplace.formulations.device_sets.LOAD_TOLERANCE` of the threshold count as within it.
        ``raise_floor``: the DP raises its floor by the sets it meets (the same maximum, faster; only sets near it
        come back). ``deadline`` (``time.monotonic()``): past it, once ``cancel`` is set, or once its fronts hold
        :data:`PRICING_MEMORY` bytes, the DP stops and :class:`TimeoutError` is raised (duals of nearly one value per
        time leave its fronts unpruned: minutes on OperatorGraphs_bert_L-12_training).
        """
        value, sets, stopped, over_budget = self._native.price(
            np.asarray(duals, dtype=np.float64), _capacity(threshold), floor, keep, raise_floor,
            max(0.0, deadline - time.monotonic()), None if cancel is None else cancel.is_set, PRICING_MEMORY)
        if over_budget:
            raise TimeoutError(f"the set pricing outgrew its memory budget ({PRICING_MEMORY} bytes)")
        if stopped:
            raise TimeoutError("the set pricing ran past its deadline or was cancelled")
        return float(value), list(sets)

    def ceiling(self, duals: np.ndarray, threshold: float) -> float:
        """An upper bound on :meth:`price`'s maximum without a dynamic program: the fractional knapsack of the allowed
        classes' times (communication only adds to a set's load, and pairs kept apart only forbid sets)."""
        capacity = _capacity(threshold)
        return _fractional_knapsack(np.where(self._allowed & (self._time <= capacity), duals, 0.0), self._time,
                                    capacity)

    def cover(self, duals: np.ndarray, threshold: float, count: int) -> list[np.ndarray]:
        """Up to ``count`` disjoint, non-empty sets within the threshold (bool per class), each found greedily (by
        dual per time, then single moves and swaps) among the classes the ones before left: many columns at once for
        a master far from a solution (a heuristic: nothing is proven from it)."""
        return list(self._native.cover(np.asarray(duals, dtype=np.float64), _capacity(threshold), count))


def _native_instance(time: np.ndarray, allowed: np.ndarray, group_cost: np.ndarray,
                    members: tuple[np.ndarray, ...] | list[np.ndarray], order: np.ndarray,
                    apart: tuple[tuple[int, int], ...] = ()) -> dict[str, np.ndarray]:
    """The native ``SetPricer``'s keyword arguments for :class:`Pricer`'s (the groups as a CSR index over their
    members, the pairs kept apart flat), also for ``benchmarks/bench_set_pricing.py``'s build of another revision."""
    sizes = [len(m) for m in members]
    return {"time": np.asarray(time, dtype=np.float64), "allowed": np.asarray(allowed, dtype=np.uint8),
            "group_cost": np.asarray(group_cost, dtype=np.float64),
            "group_ptr": np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]),
            "group_member": np.concatenate([np.asarray(m, dtype=np.int64) for m in members]) if sizes
            else np.zeros(0, dtype=np.int64),
            "order": np.asarray(order, dtype=np.int64), "apart": np.asarray(apart, dtype=np.int64).reshape(-1)}


def _capacity(threshold: float) -> float:
    """The most a set may load within ``threshold``: loads within
    :data:`~exactplace.formulations.device_sets.LOAD_TOLERANCE` of it count as within it."""
    return threshold + LOAD_TOLERANCE * max(1.0, threshold)


class _Master:
    """The restricted master LP at one threshold: class rows ``= 1`` (``>= 1`` while ``covering``, at first
    when :data:`COVERING_FIRST`), the CPU-core row ``<= l``."""

    def __init__(self, sets: SetRelaxation) -> None:
        import highspy

        self.highspy = highspy
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("threads", 1)
        # The first solve is from scratch, by dual simplex (primal simplex there, over a branch node's thousands of
        # carried-over columns, stalled for minutes in phase 2 on layer_resnet50_training). After it, columns only
        # ever join: the last basis stays primal feasible, so primal simplex restarts from it (measured on
        # layer_resnet50_inference: 49 ms a solve against 97 ms with HiGHS's default choice).
        self.h.setOptionValue("simplex_strategy", 1)
        self.restarted = False
        n = sets.classes
        self.classes = n
        self.covering = COVERING_FIRST
        inf = highspy.kHighsInf
        self.h.addRows(n + 1, np.concatenate([np.ones(n), [-inf]]),
                       np.concatenate([np.full(n, inf if self.covering else 1.0), [float(sets.cpus)]]),
                       0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        # Artificial columns, one per class: keep the master feasible; at full level costlier than any k-device
        # split, at fractional levels not always (see raise_artificial_cost).
        self.base_cost = self.artificial_cost = float(sets.accelerators + 1)
        self._add(np.eye(n, dtype=bool), cost=self.artificial_cost, cpu=False)

    def _add(self, chosen: np.ndarray, cost: float, cpu: bool) -> None:
        """Columns, one per row of ``chosen`` (bool, sets x classes), in one call."""
        if cpu:
            chosen = np.hstack([chosen, np.ones((len(chosen), 1), dtype=bool)])
        rows = np.nonzero(chosen)[1].astype(np.int32)  # row-major: column by column
        starts = np.concatenate([[0], np.cumsum(chosen.sum(axis=1))[:-1]]).astype(np.int32)
        count = len(chosen)
        self.h.addCols(count, np.full(count, cost), np.zeros(count), np.full(count, self.highspy.kHighsInf),
                       len(rows), starts, rows, np.ones(len(rows)))

    def raise_artificial_cost(self) -> bool:
        """Ten times the artificial columns' cost, while below :data:`ARTIFICIAL_COST_CAP` times ``k + 1``; False
        when there. (Half an artificial column costs less than ``k``: the master may settle at or below ``k`` on
        artificial columns where the relaxation itself is above ``k``, and its duals, capped by their cost, then
        never refute; found by brute force's tiny graphs, e.g. one accelerator and every node on two CPU cores.)"""
        if self.artificial_cost >= ARTIFICIAL_COST_CAP * self.base_cost:
            return False
        self.artificial_cost *= 10.0
        self.h.changeColsCost(self.classes, np.arange(self.classes, dtype=np.int32),
                              np.full(self.classes, self.artificial_cost))
        return True

    def partition(self) -> None:
        """Class rows ``= 1`` from now on (the relaxation itself). The covering optimum's basis stays dual feasible
        (the reduced costs do not change), so the next solve is by dual simplex from it, the first solve's way."""
        self.covering = False
        for row in range(self.classes):  # (highspy binds no batch call for row bounds)
            self.h.changeRowBounds(row, 1.0, 1.0)
        self.h.setOptionValue("simplex_strategy", 1)
        self.restarted = False

    def add(self, chosen: np.ndarray, cpu: bool) -> None:
        """Columns (bool, sets x classes): accelerators' sets (cost 1) or CPU cores' (cost 0, on the CPU row)."""
        if len(chosen):
            self._add(chosen, 0.0 if cpu else 1.0, cpu)

    def solve(self, deadline: float) -> tuple[np.ndarray, float, float] | None:
        """Solve the LP: the classes' duals, the CPU row's dual, and the LP's value when no artificial column is
        in its solution (then its columns form a solution of the relaxation, of the cover's while ``covering``:
        its value is an upper bound on that relaxation's), else infinity. (Farley's bound, from the duals, is what
        refutes; this value only says when refuting is hopeless.) None when HiGHS is still at it at the ``deadline``
        (``time.monotonic()``)."""
        # (HiGHS's time limit counts its run time over every run of this model.)
        self.h.setOptionValue("time_limit", self.h.getRunTime() + max(0.0, deadline - time.monotonic()))
        self.h.run()
        if not self.restarted:
            self.h.setOptionValue("simplex_strategy", 4)
            self.restarted = True
        elif self.h.getModelStatus() == self.highspy.HighsModelStatus.kUnknown and time.monotonic() < deadline:
            # A warm primal-simplex restart may end without a verdict (on LayerGraphs_inceptionv3_inference after
            # ~70 pricings, with time left): that solve again from scratch by dual simplex, the first solve's way,
            # rather than give the threshold up.
            self.h.clearSolver()
            self.h.setOptionValue("simplex_strategy", 1)
            self.h.setOptionValue("time_limit", self.h.getRunTime() + max(0.0, deadline - time.monotonic()))
            self.h.run()
            self.h.setOptionValue("simplex_strategy", 4)
        if self.h.getModelStatus() != self.highspy.HighsModelStatus.kOptimal:
            return None
        solution = self.h.getSolution()
        duals = np.asarray(solution.row_dual)
        artificial = np.asarray(solution.col_value[:self.classes])
        upper = self.h.getInfo().objective_function_value if artificial.max() <= 1e-9 else np.inf
        return duals[:self.classes], float(duals[self.classes]), float(upper)

    def solution(self, columns: list[tuple[np.ndarray, bool]]) -> list[_Column]:
        """The last solve's columns of positive value (``columns``: the generated ones, in the order added)."""
        values = np.asarray(self.h.getSolution().col_value)[self.classes:]
        return [_Column(chosen, cpu, float(v)) for (chosen, cpu), v in zip(columns, values) if v > FRACTIONAL]


@dataclasses.dataclass
class _Pool:
    """Every column generated, with its load, across thresholds."""

    sets: SetRelaxation
    acc: list[np.ndarray] = dataclasses.field(default_factory=list)
    acc_load: list[float] = dataclasses.field(default_factory=list)
    cpu: list[np.ndarray] = dataclasses.field(default_factory=list)
    cpu_load: list[float] = dataclasses.field(default_factory=list)

    @classmethod
    def seeded(cls, sets: SetRelaxation, seeds: tuple[np.ndarray, ...]) -> _Pool:
        """The device sets of the ``seeds`` (placements: node position -> device) and every single class."""
        pool = cls(sets)
        for device in seeds:
            acc_sets, cpu_sets = sets.device_sets(device)
            for chosen in acc_sets:
                pool.add(chosen, cpu=False)
            for chosen in cpu_sets:
                pool.add(chosen, cpu=True)
        # The single classes' loads as SetRelaxation.load sums them (the same groups, in the same order), without
        # its pass over every group and class for each (minutes on thousands of classes).
        split = sets.incidence.sum(axis=1) > 1
        for c in range(sets.classes):
            single = np.arange(sets.classes) == c
            if sets.on_acc[c]:
                pool.acc.append(single)
                crossing = sets.incidence[:, c] & split
                pool.acc_load.append(float(sets.acc[single].sum() + sets.group_cost[crossing].sum()))
            if sets.cpus:
                pool.add(single, cpu=True)
        return pool

    def add(self, chosen: np.ndarray, cpu: bool) -> None:
        """A column of an accelerator (its load with communication) or of a CPU core (its CPU time)."""
        if cpu:
            self.cpu.append(chosen)
            self.cpu_load.append(float(self.sets.cpu[chosen].sum()))
        else:
            self.acc.append(chosen)
            self.acc_load.append(self.sets.load(chosen))


def set_bound(graph: Graph, cluster: Cluster, *, target: float, lower: float | None = None,
              time_limit: float = 60.0, seeds: tuple[np.ndarray, ...] = (),
              aim: Callable[[], float] | None = None, rel_gap: float = 0.0, branch: bool = True,
              offer: Callable[[np.ndarray], None] | None = None,
              cancel: threading.Event | None = None, patience: float = PATIENCE) -> SetBound:
    """Refute thresholds up to ``target`` within ``time_limit`` seconds (module docstring).

    ``lower``: a bound already proven (the thresholds start halfway above it); ``seeds``: placements
    (node position -> device) whose device sets start the pool; ``aim``: asked before each threshold for the
    target now, ``U (1 - rel_gap)`` for the best split ``U`` known (a better split found meanwhile lowers it; a value
    above ``target`` is ignored), and before each master solve (a target at or below the bound proven ends the run; a
    split below the threshold being generated ends that generation: no refutation is left to it); ``branch``: at the
    relaxation's limit, decide the target by branch-and-price (a split found there lowers the target to its
    max load times ``1 - rel_gap``); ``offer``: called with a legal split (node position -> device) rounded from each
    master solution that converged (:func:`_rounded_split`: a start for a local search beside it); ``cancel``: set it
    to stop; ``patience``: the share of ``time_limit`` a threshold's generation may take before it is left undecided
    (:data:`PATIENCE`; beside a solver, where nothing waits for the bound, all of it).

    >>> from exactplace import read_workload, solve, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> start = solve(w, method="dp")
    >>> found = set_bound(w.graph, w.cluster, target=17.70, seeds=(start.device,), time_limit=30)
    >>> found.outcome, found.value
    ('target refuted', 17.7)
    """
    clock = time.monotonic()
    sets = SetRelaxation.of(graph, cluster)
    try:
        order = frontier_order(sets, stop=lambda: time.monotonic() - clock >= time_limit or (
            cancel is not None and cancel.is_set()))
    except TimeoutError:  # (thousands of classes: not even one order within the time given)
        return SetBound(value=None, ceiling=None, outcome="interrupted" if cancel is not None and cancel.is_set()
                        else "time", trace=(), thresholds=0, pricings=0, columns=0, seconds=time.monotonic() - clock)
    pool = _Pool.seeded(sets, seeds)

    def offered(solution: list[_Column]) -> None:
        """Offer the rounding of a converged master's solution, when legal (memory, which the relaxation drops)."""
        if offer is None or not solution:
            return
        rounded = _rounded_split(sets, solution)
        if rounded is not None and not check_feasibility(graph, cluster, placement := rounded[sets.unit]):
            offer(placement)

    bound, ceiling = lower, None  # the highest threshold proven (or given) refuted; the lowest converged
    reach = None  # the lowest threshold whose generation ran out of patience, undecided
    trace: list[tuple[float, float]] = []

    def settled() -> bool:
        """A split found meanwhile (``aim``) is certified by the bound proven already: any generation may stop."""
        return aim is not None and bool(trace) and bound is not None and aim() <= bound

    def beaten(threshold: float) -> bool:
        """A split found meanwhile has a max load below ``threshold`` (``aim`` names ``U (1 - rel_gap)`` for the best
        split ``U``): no generation can refute it, a lower one would do (op_bert6_inference: the first threshold,
        aimed from the start's 29.38, lay above the split HiGHS found seconds later)."""
        return aim is not None and aim() < threshold * (1.0 - rel_gap)

    counts = {"thresholds": 0, "pricings": 0, "nodes": 0, "dives": 0}
    outcome = "time"
    split, split_value = None, np.inf  # the best split branching found (node position -> device), its max load
    heaviest = None
    try:
        heaviest = heaviest_bound(sets, target, lower=lower, cancel=cancel,
                                  deadline=time.monotonic() + HEAVIEST_SHARE * time_limit)
        if heaviest is not None:
            bound = heaviest
            trace.append((time.monotonic() - clock, bound))
        while time.monotonic() - clock < time_limit and not (cancel is not None and cancel.is_set()):
            if aim is not None:
                target = min(target, aim())
            if bound is not None and trace and bound >= target:
                outcome = "target refuted"  # the target fell below what is proven already
                break
            if reach is not None and reach - (bound or 0.0) <= RESOLUTION * target:
                reach = None  # refuted up to it: try above it again, with the columns gathered since
            if ceiling is not None and ceiling <= target:  # the target lies beyond the relaxation: to its limit
                threshold = ((bound or 0.0) + min(ceiling, reach or ceiling)) / 2.0
                if ceiling - (bound or 0.0) <= RESOLUTION * target or not (bound or 0.0) < threshold < ceiling:
                    outcome = "limit reached"  # (or no float between them: tiny loads, nothing to halve)
                    if not branch:
                        break
                    # Branching, at the target or, nearer the limit, where a split found is certified by the bound
                    # (within rel_gap of it): the closer to the limit, the fewer branches either way.
                    threshold = target if rel_gap <= 0.0 or bound is None else min(target, bound / (1.0 - rel_gap))
                    counts["thresholds"] += 1
                    verdict, device = _branch_and_price(
                        sets, order, pool, threshold, clock + time_limit, cancel, counts, settled, offered)
                    if verdict == "settled":
                        continue  # (the target, lowered, is below the bound: refuted, at the top of the loop)
                    if verdict == "refuted":
                        bound = threshold  # (above the ceiling now: the next pass comes straight back here)
                        trace.append((time.monotonic() - clock, bound))
                        if threshold >= target:
                            outcome = "target refuted"
                            break
                        continue
                    value = max_load(graph, cluster, device[sets.unit]) if device is not None else np.inf
                    if not (value < split_value and not check_feasibility(graph, cluster, device[sets.unit])):
                        break  # stopped (time, or a solution it could not branch on), or a split over memory
                    split, split_value = device[sets.unit], value
                    target = min(target, value * (1.0 - rel_gap))
                    continue
            elif reach is not None and reach < target:
                threshold = ((bound or 0.0) + reach) / 2.0  # below the undecided one
            elif bound is None or target - bound <= APPROACH * target:
                threshold = target
            else:
                threshold = (bound + target) / 2.0
            counts["thresholds"] += 1
            until = min(clock + time_limit, time.monotonic() + patience * time_limit)
            generation = _refute(sets, pool, threshold, until, cancel, counts,
                                 settled=lambda at=threshold: settled() or beaten(at))
            verdict = generation.verdict
            if verdict == "stopped" and (settled() or beaten(threshold)):
                continue  # (at the top of the loop: the target, lowered, is refuted already or lies below)
            if verdict == "stopped":
                if time.monotonic() - clock >= time_limit or (cancel is not None and cancel.is_set()):
                    break
                if len(trace) == (heaviest is not None):  # no generation refuted yet: too slow here to bound
                    outcome = "undecided"
                    break
                reach = threshold if reach is None else min(reach, threshold)
                continue
            if verdict == "converged":
                ceiling = threshold
                offered(generation.solution)
                continue
            bound = threshold
            trace.append((time.monotonic() - clock, bound))
            if threshold >= target:
                outcome = "target refuted"
                break
    except KeyboardInterrupt:
        outcome = "interrupted"
    if cancel is not None and cancel.is_set():
        outcome = "interrupted"
    return SetBound(value=bound if trace else None, ceiling=ceiling, outcome=outcome, trace=tuple(trace),
                    thresholds=counts["thresholds"], pricings=counts["pricings"],
                    columns=len(pool.acc) + len(pool.cpu), seconds=time.monotonic() - clock, split=split,
                    split_value=split_value if split is not None else None, nodes=counts["nodes"],
                    dives=counts["dives"], heaviest=heaviest)


@dataclasses.dataclass(frozen=True)
class _Branch:
    """A node of the branch-and-price (Ryan and Foster): pairs of classes on one device, pairs on two; and a dive's
    ``fixed`` columns (class sets, whether a CPU core's): each takes a device of its kind, no other column touches
    its classes."""

    together: tuple[tuple[int, int], ...] = ()
    apart: tuple[tuple[int, int], ...] = ()
    fixed: tuple[tuple[np.ndarray, bool], ...] = ()

    def admits(self, chosen: np.ndarray, cpu: bool = False) -> np.ndarray:
        """Which columns (bool, sets x classes; a CPU core's when ``cpu``) respect the node's pairs and fixed
        columns."""
        fits = np.ones(len(chosen), dtype=bool)
        for a, b in self.together:
            fits &= chosen[:, a] == chosen[:, b]
        for a, b in self.apart:
            fits &= ~(chosen[:, a] & chosen[:, b])
        if self.fixed:
            fits &= ~chosen[:, self.taken()].any(axis=1) | np.isin(
                [row.tobytes() for row in chosen], [f.tobytes() for f, on_cpu in self.fixed if on_cpu == cpu])
        return fits

    def taken(self) -> np.ndarray:
        """The fixed columns' classes (bool per class; only asked when there are some)."""
        return np.any([f for f, _ in self.fixed], axis=0)

    def pricers(self, sets: SetRelaxation, threshold: float) -> tuple[_MergedPricer, _MergedPricer] | None:
        """The accelerators' and the CPU cores' pricings within the node: each pair kept together one class
        (:meth:`~exactplace.formulations.device_sets.SetRelaxation.merged`), each pair kept apart the DP's own
        constraint, the fixed columns' classes in no new set. None when a pair kept apart is in one merged class
        (no split is in the node)."""
        merged, into = sets.merged(self.together)
        apart = tuple((int(into[a]), int(into[b])) for a, b in self.apart)
        if any(a == b for a, b in apart):
            return None
        free = np.ones(merged.classes, dtype=bool)
        if self.fixed:
            free[into[self.taken()]] = False
        acc = Pricer(merged.acc, merged.on_acc & free, merged.group_cost, merged.members, frontier_order(merged),
                     apart)
        cpu = Pricer(merged.cpu, (merged.cpu <= threshold) & free, np.zeros(0), [], np.arange(merged.classes), apart)
        return (_MergedPricer(acc, into, tuple(f for f, on_cpu in self.fixed if not on_cpu)),
                _MergedPricer(cpu, into, tuple(f for f, on_cpu in self.fixed if on_cpu)))


@dataclasses.dataclass(frozen=True)
class _MergedPricer:
    """A pricing over merged classes, asked and answering in the relaxation's own classes; the node's ``fixed``
    columns of its kind (class sets) count in its maximum, never among its new sets."""

    pricer: Pricer
    into: np.ndarray  # class -> merged class
    fixed: tuple[np.ndarray, ...] = ()

    def price(self, duals: np.ndarray, threshold: float, floor: float, keep: int, deadline: float = np.inf,
              cancel: threading.Event | None = None) -> tuple[float, list[np.ndarray]]:
        """:meth:`Pricer.price` at the merged classes' duals (their members' sums), its sets mapped back; the
        maximum over the fixed columns too."""
        value, found = self.pricer.price(self._merged(duals), threshold, floor, keep, deadline=deadline, cancel=cancel)
        return max([value, *(float(duals[f].sum()) for f in self.fixed)]), [chosen[self.into] for chosen in found]

    def ceiling(self, duals: np.ndarray, threshold: float) -> float:
        """:meth:`Pricer.ceiling` at the merged classes' duals, the fixed columns' values too."""
        return max([self.pricer.ceiling(self._merged(duals), threshold), *(float(duals[f].sum()) for f in self.fixed)])

    def cover(self, duals: np.ndarray, threshold: float, count: int) -> list[np.ndarray]:
        """:meth:`Pricer.cover` at the merged classes' duals, its sets mapped back."""
        return [chosen[self.into] for chosen in self.pricer.cover(self._merged(duals), threshold, count)]

    def _merged(self, duals: np.ndarray) -> np.ndarray:
        """The merged classes' duals: their members' sums."""
        return np.bincount(self.into, duals, int(self.into.max()) + 1)


@dataclasses.dataclass(frozen=True)
class _Column:
    """A column of a master's solution: its class set, whether a CPU core's, its value."""

    chosen: np.ndarray
    cpu: bool
    value: float


@dataclasses.dataclass(frozen=True)
class _Generation:
    """How a column generation ended: ``verdict`` ``"refuted"``, ``"converged"`` (not refuted) or ``"stopped"``;
    when converged, the restricted master's ``solution`` (of value ``<= k``, free of artificial columns; empty when
    it has none such) and its last ``duals`` (per class, and the CPU row's): a branch's children start from them.
    ``farley``: the best Farley bound met (the threshold is refuted once it exceeds ``k``); ``upper``: the last
    master's value (infinite while artificial columns are in its solution, or before any master was solved; the
    cover's while the master covered, at most the relaxation's)."""

    verdict: str
    solution: list[_Column] = dataclasses.field(default_factory=list)
    duals: tuple[np.ndarray, float] | None = None
    farley: float = -np.inf
    upper: float = np.inf


def _refute(sets: SetRelaxation, pool: _Pool, threshold: float, deadline: float, cancel: threading.Event | None,
            counts: dict[str, int], node: _Branch = _Branch(),
            center: tuple[np.ndarray, float] | None = None,
            settled: Callable[[], bool] = lambda: False) -> _Generation:
    """Column generation at one threshold within a branch ``node``, its duals smoothed towards ``center`` (else
    towards the packing bound's duals, :func:`_work_center`) until a pricing beats it; ``"stopped"`` at the
    ``deadline`` (a pricing's included), on ``cancel``, or once ``settled()`` (asked before each master solve: nothing
    left to prove)."""
    k, cpus = sets.accelerators, sets.cpus
    # (No shortcut "a class over T alone fits nowhere": a set's load is not monotone, the class may fit with
    # the classes it communicates with. The artificial columns cover it, and Farley's bound decides.)
    pricers = node.pricers(sets, threshold)
    if pricers is None:
        return _Generation("refuted")
    acc_pricer, cpu_pricer = pricers
    master = _Master(sets)
    columns: list[tuple[np.ndarray, bool]] = []
    for cpu, chosen_sets, loads in ((False, pool.acc, pool.acc_load), (True, pool.cpu, pool.cpu_load)):
        held = np.array(chosen_sets, dtype=bool).reshape(len(chosen_sets), sets.classes)
        held = held[(np.array(loads) <= threshold) & node.admits(held, cpu)] if len(held) else held
        master.add(held, cpu=cpu)
        columns += [(chosen, cpu) for chosen in held]
    best, (stable, stable_cpu) = -np.inf, center or (None, 0.0)

    def add(chosen_sets: list[np.ndarray], cpu: bool) -> int:
        """The columns among ``chosen_sets`` that improve the master at its own duals ``pi``, added; how many. (A
        smoothed pricing may return columns already there, a "misprice": adding them again would never end.)"""
        reduced = (lambda s: pi[s].sum() + sigma > 1e-9) if cpu else (lambda s: pi[s].sum() > 1.0 + 1e-9)
        improving = list({chosen.tobytes(): chosen for chosen in chosen_sets if reduced(chosen)}.values())
        for chosen in improving:
            master.add(chosen[None, :], cpu=cpu)
            pool.add(chosen, cpu=cpu)
            columns.append((chosen, cpu))
        return len(improving)

    def cpu_priced(duals: np.ndarray, cap: float) -> tuple[float, list[np.ndarray], bool]:
        """The CPU cores' pricing, and whether it was exact: exact when done by ``cap``; past it at smoothed duals,
        their ceiling and a greedy set. A plain knapsack whose values are nearly proportional to its weights keeps
        every subset sum (op_bert6_inference: one pricing at smoothed duals 25.6 s, the accelerators' 0.25 s); Farley's
        bound needs only an upper bound, any set that prices out is a column. (At the master's duals it stays exact,
        ``cap`` the generation's deadline: "no column prices out" decides convergence.)"""
        if not cpus:
            return 0.0, [], True
        try:
            return *cpu_pricer.price(duals, threshold, floor=0.0, keep=3, deadline=cap, cancel=cancel), True
        except TimeoutError:
            if cap >= deadline:
                raise
            return cpu_pricer.ceiling(duals, threshold), cpu_pricer.cover(duals, threshold, 1), False

    weight, upper = SMOOTHING, np.inf
    packing = center is None and PACKING_CENTER  # the center is the packing bound's point (until given up, below)
    if packing:
        best, stable, stable_cpu = _work_center(sets, threshold)
        if best > k + MARGIN:
            return _Generation("refuted", farley=best)
    proven = best  # the best Farley bound met (``best`` is the center's, which starts again where a center is given up)
    try:
        greedy_rounds = 0  # master solves since the last exact pricing
        master_seconds, pricing_seconds = 0.0, 0.0  # the last master solve's and the last exact pricing's
        while time.monotonic() < deadline and not (cancel is not None and cancel.is_set()) and not settled():
            started = time.monotonic()
            solved = master.solve(deadline)
            master_seconds = time.monotonic() - started
            if solved is None:
                break
            pi, sigma, upper = solved
            if master.covering and upper <= k * (1.0 + COVER_ROOM):  # near k: the partition's turn
                master.partition()
                continue
            if upper <= k - MARGIN:  # the relaxation holds a solution of value <= k: this threshold cannot be refuted
                return _Generation("converged", master.solution(columns), (pi, sigma), proven, upper)
            if stable is None:  # (PACKING_CENTER off: the first master's duals)
                stable, stable_cpu = pi, sigma
            costly = pricing_seconds > GREEDY_WHEN * master_seconds  # (a branchy graph's): the greedy cover helps
            if greedy_rounds < GREEDY_ROUNDS and costly and add(acc_pricer.cover(pi, threshold, k), cpu=False):
                greedy_rounds += 1
                continue
            greedy_rounds = 0
            added = 0
            points = [(weight * stable + (1 - weight) * pi, weight * stable_cpu + (1 - weight) * sigma), (pi, sigma)]
            for duals, cpu_dual in points if pricing_seconds else points[::-1]:  # (first, a pricing's time to scale)
                counts["pricings"] += 1
                started = time.monotonic()
                smoothed = duals is not pi
                cap = min(deadline, started + max(1.0, SMOOTHED_PRICING_SLACK * pricing_seconds)) if smoothed \
                    else deadline
                try:
                    z, acc_sets = acc_pricer.price(duals, threshold, floor=1.0, keep=COLUMNS_PER_PRICING, deadline=cap,
                                                   cancel=cancel)
                    z_cpu, cpu_sets, exact = cpu_priced(duals, min(cap, time.monotonic() + CPU_PRICING_SECONDS)
                                                        if smoothed else cap)
                except TimeoutError:
                    if cap >= deadline:
                        raise
                    weight = 0.0  # (it rises again as the pricings say)
                    continue
                pricing_seconds = time.monotonic() - started
                if z > 1.0 and costly:
                    acc_sets += acc_pricer.cover(duals, threshold, k)
                farley = (duals.sum() - cpus * z_cpu) / max(z, 1.0)
                if smoothed:
                    weight = _adapted_weight(weight, k * _first(acc_sets, sets.classes) + cpus * _first(
                        cpu_sets, sets.classes), pi - stable)
                proven = max(proven, farley)
                if packing and not exact and LEAVE_PACKING_CENTER:
                    # Near the packing point the CPU cores' values are their classes' accelerator times over T: where
                    # CPU times are nearly proportional to those (the operator graphs'), their knapsack keeps every
                    # subset sum and only its ceiling comes back, so no bound at smoothed duals beats the point's, the
                    # center stays there and every pricing near it is slow (op_bert6_inference at 28.0811: 33.8 s, 37
                    # pricings, each CPU pricing past its cap). The master's duals become the center, as without it
                    # (2.6 s, 34 pricings; the layer graphs' CPU pricings end in time near the point, which stays).
                    packing, best, stable, stable_cpu = False, -np.inf, pi, sigma
                elif farley > best:
                    best, stable, stable_cpu = farley, duals, cpu_dual
                if proven > k + MARGIN:
                    return _Generation("refuted", farley=proven, upper=upper)
                added = add(acc_sets, cpu=False) + add(cpu_sets, cpu=True)
                if added:
                    break
            if not added:
                if upper == np.inf and master.raise_artificial_cost():
                    continue  # the master's optimum rests on artificial columns: dearer, they may leave it
                if master.covering:  # the cover's optimum, not above k + MARGIN: the partition may be higher
                    master.partition()
                    continue
                return _Generation("converged", master.solution(columns) if upper <= k + MARGIN else [], (pi, sigma),
                                   proven, upper)
    except TimeoutError:  # a pricing ran past the deadline
        pass
    return _Generation("stopped", farley=proven, upper=upper)


def heaviest_bound(sets: SetRelaxation, target: float, *, lower: float | None = None, deadline: float = np.inf,
                   cancel: threading.Event | None = None) -> float | None:
    """A threshold below ``target`` that no split reaches, from its heaviest accelerator; None when it proves nothing
    above ``lower`` (or above 0).

    A split with max load ``T <= target`` puts at most ``z_C`` accelerator time on each CPU core (the fractional
    knapsack of :func:`_work_center`, within ``target``), so one of its ``k`` accelerators holds at least ``need =
    (W - l z_C) / k`` of the accelerators' total ``W``, and that accelerator's load, at most ``T``, is at least the
    least load of any set that heavy: :func:`~exactplace.formulations.device_sets.lightest_heavy_set`, a MIP on HiGHS
    whose dual bound (a stopped solve's too) is lowered by :data:`HEAVIEST_MARGIN`. (The set relaxation's Farley bound
    at the duals ``acc / A(T)``, ``A(T)`` the heaviest set within ``T``, decides the same thresholds one at a time.)
    Where a split's sets must pay communication to be that heavy, this is what the packing bound misses: on
    OperatorGraphs_bert_L-12_training (2,012 operators on 6 accelerators) it proves in seconds a bound well above the
    packing bound and above what HiGHS's bound on the assignment IP reaches in ten minutes, and the thresholds start
    there. Elsewhere a set that heavy needs little communication: the MIP stops at its
    first set that heavy within ``lower``.
    Ctrl-C (or ``cancel``) during the MIP raises :class:`KeyboardInterrupt`.
    """
    from exactplace.solvers import Request, solve_model

    if cancel is not None and cancel.is_set():
        raise KeyboardInterrupt
    # The work center's Farley bound is (W - l z_C) / T, in the units of T (its values are acc / T): T times it is
    # the accelerators' share, and 1 / k of that is what the heaviest one holds at least.
    farley, _, _ = _work_center(sets, target)
    need = _capacity(target) * farley / sets.accelerators
    if need <= 0.0:
        return None
    enough = threading.Event()  # the solve stops on it: a set that heavy within `lower` met, or `cancel`

    def watch(point: TracePoint) -> None:
        if (lower is not None and point.incumbent is not None and point.incumbent <= lower) or (
                cancel is not None and cancel.is_set()):
            enough.set()

    model, _ = lightest_heavy_set(sets, need)
    out = solve_model(model, "highs", Request(deadline=deadline, rel_gap=1e-6, threads=1, cancel=enough,
                                              progress=watch))
    if lower is not None and out.objective is not None and out.objective <= lower:
        return None  # the least load is no higher than `lower`: nothing proven above it
    if out.limit is Limit.INTERRUPT:
        raise KeyboardInterrupt
    if out.bound is None or not np.isfinite(out.bound):
        return None
    refuted = min(out.bound - HEAVIEST_MARGIN * (1.0 + abs(out.bound)), target)
    return refuted if refuted > (0.0 if lower is None else lower) else None  # (loads are never below 0)


def _work_center(sets: SetRelaxation, threshold: float) -> tuple[float, np.ndarray, float]:
    """The packing bound as a point of the dual: ``pi_c = acc_c / T`` (``T`` with its tolerance, :func:`_capacity`)
    for the classes an accelerator may hold (0 for the others), with its Farley bound and the CPU row's dual ``-z_C``.
    No pricing is needed: a set's load is at least its accelerator time, so ``pi(S) <= 1`` on every set within ``T``;
    ``z_C`` is the CPU cores' fractional knapsack, an upper bound on their best set (the exact knapsack, at values
    proportional to the CPU times, keeps every subset sum: not done in minutes on OperatorGraphs_bert_L-12_training).
    A generation's first center (:data:`PACKING_CENTER`; the first master's duals are far worse: on
    LayerGraphs_inceptionv3_inference at 51.1515 this point's bound, 5.979, is what 670 s of generation from the
    master's duals reached)."""
    capacity = _capacity(threshold)
    pi = np.where(sets.on_acc, sets.acc, 0.0) / capacity
    # (Over the classes a CPU core's pricing allows, those within the threshold alone.)
    z_cpu = _fractional_knapsack(np.where(sets.cpu <= threshold, pi, 0.0), sets.cpu, capacity) if sets.cpus else 0.0
    return float(pi.sum() - sets.cpus * z_cpu), pi, -z_cpu


def _fractional_knapsack(value: np.ndarray, weight: np.ndarray, capacity: float) -> float:
    """The knapsack's LP bound: the items of positive value that fit alone, best value per weight first, the last one
    in part (an upper bound on every set of weight within ``capacity``).

    >>> _fractional_knapsack(np.array([3.0, 2.0, 1.0, 5.0]), np.array([3.0, 1.0, 2.0, 9.0]), 3.0)
    4.0
    """
    fits = (value > 0.0) & (weight <= capacity)
    weightless = fits & (weight <= 0.0)
    rest = np.flatnonzero(fits & ~weightless)
    with np.errstate(over="ignore"):  # (a weight near 0 makes the ratio infinite: first, as it should be)
        rest = rest[np.argsort(-value[rest] / weight[rest], kind="stable")]
    filled = np.cumsum(weight[rest])
    whole = int(np.searchsorted(filled, capacity, side="right"))
    total = float(value[weightless].sum() + value[rest[:whole]].sum())
    if whole < len(rest):
        room = capacity - (filled[whole - 1] if whole else 0.0)
        total += float(value[rest[whole]] * room / weight[rest[whole]])
    return total


def _first(found: list[np.ndarray], classes: int) -> np.ndarray:
    """The best of a pricing's sets as 0/1 per class (all 0 when it found none)."""
    return found[0].astype(float) if found else np.zeros(classes)


def _adapted_weight(weight: float, devices_at_best: np.ndarray, direction: np.ndarray) -> float:
    """The smoothing's next weight (Pessoa, Sadykov, Uchoa and Vanderbeck 2018, "Automation and combination of
    linear-programming based stabilization techniques in column generation"): the Lagrangian's subgradient at the
    smoothed duals, ``1 - devices_at_best`` (``k`` for each class in the best accelerator set priced there, plus
    ``l`` for each in the best CPU core's), pointing towards the master's duals (``direction``: the master's minus the
    center) says the bound rises that way: the weight falls by 0.1 (towards the master); else it rises a tenth of the
    way to :data:`SMOOTHING_CAP`.

    >>> _adapted_weight(0.5, np.array([2.0, 0.0]), np.array([-1.0, 1.0]))  # subgradient (-1, 1): towards the master
    0.4
    >>> round(_adapted_weight(0.5, np.array([2.0, 0.0]), np.array([1.0, -1.0])), 3)
    0.549
    """
    if (1.0 - devices_at_best) @ direction > 0.0:
        return max(0.0, weight - 0.1)
    return weight + (SMOOTHING_CAP - weight) * 0.1


def _branch_and_price(sets: SetRelaxation, order: np.ndarray, pool: _Pool, threshold: float, deadline: float,
                      cancel: threading.Event | None, counts: dict[str, int],
                      settled: Callable[[], bool],
                      offer: Callable[[list[_Column]], None]) -> tuple[str, np.ndarray | None]:
    """Decide a threshold the relaxation alone cannot refute, by branching on pairs of classes (Ryan and Foster:
    a pair on one device in some columns of the master's solution and on two in others is kept together in one
    branch, apart in the other), depth first: ``("refuted", None)`` when every branch is refuted (the threshold
    is a lower bound of every split), ``("split", device)`` when a branch's master solution is integral (one set
    per device, each within the threshold; ``device``: class -> device, accelerators first), or the dive from the
    first fractional node (:func:`_dive`) met one, ``("stopped", None)``
    at the deadline or on a solution it cannot branch on (a set shared fractionally by an accelerator and a CPU
    core), ``("settled", None)`` as soon as ``settled()`` (asked before each master solve: a better split found
    meanwhile is certified by the bound already). Each fractional node solution is passed to ``offer``."""
    stack: list[tuple[_Branch, tuple[np.ndarray, float] | None]] = [(_Branch(), None)]  # with the parent's duals
    later: list[tuple[_Branch, tuple[np.ndarray, float] | None]] = []  # out of patience: again once the rest is done
    patience = NODE_PATIENCE * max(0.0, deadline - time.monotonic())
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    dive, dive_time = True, DIVE_PATIENCE * max(0.0, deadline - time.monotonic())
    while stack or later:
        if time.monotonic() >= deadline or (cancel is not None and cancel.is_set()):
            return "stopped", None
        if settled():
            return "settled", None
        if not stack:
            stack, later, patience = later[::-1], [], 4.0 * patience
        node, center = stack.pop()
        counts["nodes"] += 1
        ended = _refute(sets, pool, threshold, min(deadline, time.monotonic() + patience), cancel, counts, node,
                        center, settled)
        if ended.verdict == "refuted":
            continue
        if ended.verdict == "stopped":
            later.append((node, center))
            continue
        if not ended.solution:
            return "stopped", None
        pair, together = _fractional_pair(ended.solution, position)
        if pair is None:
            return _integral_split(sets, ended.solution)
        offer(ended.solution)
        if dive:
            dive = False  # (once a tree: it may cost a fifth of the tree's time)
            device = _dive(sets, pool, threshold, min(deadline, time.monotonic() + dive_time), cancel, counts,
                           settled, node, ended, position)
            if device is not None:
                return "split", device
        kept, parted = (dataclasses.replace(node, together=(*node.together, pair)),
                        dataclasses.replace(node, apart=(*node.apart, pair)))
        children = [(parted, ended.duals), (kept, ended.duals)]
        stack.extend(children if together >= 0.5 else children[::-1])  # the likelier branch first (popped last)
    return "refuted", None


def _dive(sets: SetRelaxation, pool: _Pool, threshold: float, deadline: float, cancel: threading.Event | None,
          counts: dict[str, int], settled: Callable[[], bool], node: _Branch, ended: _Generation,
          position: np.ndarray) -> np.ndarray | None:
    """A split within ``threshold`` by column fixing from a node's converged master (a diving heuristic; nothing is
    proven when it fails): the master's columns of value 1 and one fractional column are fixed (each takes a device
    of its kind, no other column touches their classes), the generation runs again within the node so made, until a
    master is integral (the split, class -> device). The fractional column fixed is the largest; where the
    generation after it refutes (or ends otherwise) the next largest of the :data:`DIVE_WIDTH` largest is tried,
    depth first, until the ``deadline`` or :data:`DIVE_DEPTHS` times ``k + l`` generations (None: no split met).

    Ryan and Foster's branching fixes one pair of classes a node: on layer_resnet50_inference at 33.22534 it went 45
    to 78 nodes (four to ten minutes) before meeting a split; a dive is ``k + l`` levels deep at most, a few seconds
    each there."""
    stack: list[tuple[_Branch, tuple[np.ndarray, float] | None]] = [(node, None)]  # with the parent's duals
    generations = DIVE_DEPTHS * (sets.accelerators + sets.cpus)
    while stack and time.monotonic() < deadline and not (cancel is not None and cancel.is_set()):
        node, center = stack.pop()
        if center is not None:  # (the first node's generation is given)
            if not generations:
                break
            generations -= 1
            counts["dives"] = counts.get("dives", 0) + 1
            ended = _refute(sets, pool, threshold, deadline, cancel, counts, node, center, settled)
        if ended.verdict != "converged" or not ended.solution:
            continue
        pair, _ = _fractional_pair(ended.solution, position)
        if pair is None:
            verdict, device = _integral_split(sets, ended.solution)
            if verdict == "split":
                return device
            continue
        held = {chosen.tobytes() for chosen, _ in node.fixed}
        free = [column for column in ended.solution if column.chosen.tobytes() not in held]
        whole = tuple((column.chosen, column.cpu) for column in free if column.value >= 1.0 - FRACTIONAL)
        candidates = sorted((column for column in free if column.value < 1.0 - FRACTIONAL),
                            key=lambda column: -column.value)[:DIVE_WIDTH]
        for column in candidates[::-1]:  # the largest first (popped last)
            stack.append((dataclasses.replace(node, fixed=(*node.fixed, *whole, (column.chosen, column.cpu))),
                          ended.duals))
    return None


def _fractional_pair(solution: list[_Column], position: np.ndarray) -> tuple[tuple[int, int] | None, float]:
    """A pair of classes whose share of one device (the sum of the values of the columns holding both) is near
    the furthest from 0 and 1 (within :data:`NEAR_SPREAD`), the nearest such pair in the pricing's processing order
    (``position``: class -> place; a pair kept together is a group open from one to the other in the DP), with its
    share; None when every share is 0 or 1."""
    held = np.array([column.chosen for column in solution], dtype=np.float64)
    values = np.array([column.value for column in solution])
    share = held.T @ (values[:, None] * held)
    spread = np.triu(np.minimum(share, 1.0 - share), k=1)
    widest = float(spread.max())
    if widest <= FRACTIONAL:
        return None, 0.0
    first, second = np.nonzero(spread >= max(widest - NEAR_SPREAD, FRACTIONAL * 2))
    nearest = int(np.argmin(np.abs(position[first] - position[second])))
    i, j = int(first[nearest]), int(second[nearest])
    return (i, j), float(share[i, j])


def _integral_split(sets: SetRelaxation, solution: list[_Column]) -> tuple[str, np.ndarray | None]:
    """The split of a master solution whose pairs' shares are all 0 or 1: its distinct sets are disjoint; each
    becomes one device when all of its value lies on accelerators or all on CPU cores."""
    device = np.full(sets.classes, -1, dtype=np.int64)
    share: dict[bytes, list[float]] = {}
    chosen_of: dict[bytes, np.ndarray] = {}
    for column in solution:
        key = column.chosen.tobytes()
        chosen_of[key] = column.chosen
        share.setdefault(key, [0.0, 0.0])[int(column.cpu)] += column.value
    acc, cpu = 0, sets.accelerators
    for key, (on_acc, on_cpu) in share.items():
        if min(on_acc, on_cpu) > FRACTIONAL:
            return "stopped", None
        if on_acc >= on_cpu:
            device[chosen_of[key]], acc = acc, acc + 1
        else:
            device[chosen_of[key]], cpu = cpu, cpu + 1
    if (device < 0).any() or acc > sets.accelerators or cpu > sets.accelerators + sets.cpus:
        return "stopped", None
    return "split", device


def _rounded_split(sets: SetRelaxation, solution: list[_Column]) -> np.ndarray | None:
    """A split near a master's (fractional) solution, class -> device: its columns by decreasing value, each
    onto a free device of its kind while disjoint from the columns taken (an accelerator's within the memory);
    then each class left, the heaviest first, onto the device where the max load ends lowest (then its own load;
    an accelerator only when the class is allowed there and fits). None when a class fits nowhere.

    (Measured on layer_resnet50_inference: roundings of the converged masters near the relaxation's limit, each
    polished for a minute, ended at 33.2222, 33.2289, 33.2361, 33.2466 and 33.2696; the best split known is
    33.2222.)"""
    k, cpus = sets.accelerators, sets.cpus
    device = np.full(sets.classes, -1, dtype=np.int64)
    free = {False: list(range(k)), True: list(range(k, k + cpus))}
    for column in sorted(solution, key=lambda column: -column.value):
        if (not free[column.cpu] or (device[column.chosen] >= 0).any() or (not column.cpu and (
                not sets.on_acc[column.chosen].all() or sets.memory[column.chosen].sum() > sets.memory_cap))):
            continue
        device[column.chosen] = free[column.cpu].pop(0)
    # Placing a class changes only its own device's load: every other device had it outside already.
    loads = np.array([sets.load(device == d) for d in range(k)]
                     + [float(sets.cpu[device == d].sum()) for d in range(k, k + cpus)])
    memory = np.array([sets.memory[device == d].sum() for d in range(k)])
    for c in np.argsort(-sets.acc, kind="stable"):
        if device[c] >= 0:
            continue
        best: tuple[float, float, int] | None = None
        for d in range(k + cpus):
            if d < k:
                if not sets.on_acc[c] or memory[d] + sets.memory[c] > sets.memory_cap:
                    continue
                load = sets.load((device == d) | (np.arange(sets.classes) == c))
            else:
                load = loads[d] + sets.cpu[c]
            others = np.delete(loads, d)
            candidate = (max(load, float(others.max()) if others.size else 0.0), load, d)
            best = candidate if best is None or candidate < best else best
        if best is None:
            return None
        _, load, d = best
        device[c], loads[d] = d, load
        if d < k:
            memory[d] += sets.memory[c]
    return device
