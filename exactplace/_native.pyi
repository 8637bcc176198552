"""Type stubs of the C++ extension ``exactplace._native`` (built from ``dp_native/``).

Load it through :func:`exactplace.native.load`, which checks ``abi_version``.
Arrays are copied in (any numeric dtype convertible to the one shown); the GIL is released
while C++ runs, and Ctrl-C raises KeyboardInterrupt. Malformed input raises ValueError.
"""

import enum

import numpy as np
import numpy.typing as npt

abi_version: int

class TooManyIdeals(RuntimeError):
    """``args == (message, count, limit)``: the lattice has more than ``limit`` ideals (at least ``count``)."""

class Status(enum.Enum):
    """How a solve ended."""

    optimal = 0
    infeasible = 1
    time = 2
    interrupt = 3

class Request:
    """Everything :func:`solve` needs: the unit graph (arrays), the cluster and the limits."""

    units: int
    cpu_time: npt.ArrayLike
    acc_time: npt.ArrayLike
    memory: npt.ArrayLike
    supported: npt.ArrayLike
    edge_src: npt.ArrayLike
    edge_dst: npt.ArrayLike
    group_cost: npt.ArrayLike
    group_source: npt.ArrayLike
    group_ptr: npt.ArrayLike
    group_target: npt.ArrayLike
    order: npt.ArrayLike  # empty: every ideal; else a topological order whose prefixes are the ideals (DPL)
    accelerators: int
    cpus: int
    memory_cap: float
    # Accelerator types (empty: ``accelerators`` alike, of ``memory_cap``, speed 1); counts sum to ``accelerators``.
    # Solution.device numbers accelerators by type. The chain DP (``order``) takes none.
    type_count: npt.ArrayLike
    type_memory: npt.ArrayLike
    type_speed: npt.ArrayLike
    overlap: bool
    # Replicated accelerator stages (paper Appendix C.2): one type, no overlap, no order; ``sync`` per unit.
    replication: bool
    sync: npt.ArrayLike
    threads: int
    time_limit: float
    max_ideals: int

class Solution:
    """The result of :func:`solve`; ``device`` is one device per unit, or None."""

    status: Status
    value: float
    device: np.ndarray | None
    replicas: np.ndarray | None  # with ``replication``: per accelerator (1 when unused)
    ideals: int
    covers: int
    pairs: int
    seconds_ideals: float
    seconds_dp: float
    threads: int

class BoundedSolution:
    """The result of :func:`solve_bounded`: the best split found and the best proven lower bound."""

    status: Status
    value: float
    bound: float
    device: np.ndarray | None
    states: int
    stages: int
    remembered: int
    thresholds: int
    exhausted: bool  # the candidate stages passed ``stage_bytes``
    seconds: float

def solve_bounded(
    request: Request, memo_limit: int = ..., tolerance: float = ..., bisect_after: int = ..., stage_bytes: int = ...,
    dive_nodes: int = ..., random_dives: int = ..., bidirectional: bool = ..., first_budget: int = ...,
) -> BoundedSolution:
    """The bounded search over ideals on ``request``'s model: certified, or stopped with a true gap."""

def count_ideals(
    units: int, src: npt.ArrayLike, dst: npt.ArrayLike, limit: int
) -> tuple[int, int] | None:
    """``(ideals, covers)`` of the DAG on ``0..units-1``, or None when it has more than ``limit`` ideals."""

def solve(request: Request) -> Solution:
    """Run the max-load DP (over the prefixes of ``request.order`` when it is set)."""

def memory_estimate(
    units: int, accelerators: int, cpus: int, ideals: int, covers: int, type_count: npt.ArrayLike = ...
) -> int:
    """Bytes ``solve`` allocates for a lattice of ``ideals`` ideals and ``covers`` cover pairs (with
    ``type_count``: one count per accelerator type, replacing ``accelerators``); saturates at 2**63 - 1."""

def chain_memory_estimate(units: int, cpus: int, group_members: int) -> int:
    """Bytes ``solve`` allocates for a request with an ``order`` (the chain DP)."""

def latency_path_bound(
    *,
    units: int,
    edge_src: npt.ArrayLike,
    edge_dst: npt.ArrayLike,
    cpu_time: npt.ArrayLike,
    acc_time: npt.ArrayLike,
    memory: npt.ArrayLike,
    memory_cap: float,
    accelerators: int,
    cpus: bool,
    group_cost: npt.ArrayLike,
    group_source: npt.ArrayLike,
    group_ptr: npt.ArrayLike,
    group_target: npt.ArrayLike,
    group_stuck: npt.ArrayLike,
    group_sink_memory: npt.ArrayLike,
    path_ptr: npt.ArrayLike,
    path_node: npt.ArrayLike,
    max_ideals: int,
    memory_budget: int,
    time_limit: float,
) -> dict:
    """The latency path bound's DP (``dp_native/path.hpp``) over the ideals of the reduced graph.

    Returns a dict: ``status`` (``"done"``, ``"too_many_ideals"``, ``"over_budget"``, ``"time"``),
    ``values`` (per path), ``chains`` (per path: ``(step of each unit, whether each step is an
    accelerator subgraph)``, or None without a chain), ``ideals``, ``covers``, ``pairs``, ``bytes``,
    ``seconds_ideals``, ``seconds_dp``.
    """
