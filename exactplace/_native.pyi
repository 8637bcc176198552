"""Type stubs of the C++ extension ``exactplace._native`` (built from ``dp_native/``).

Arrays are copied in (any numeric dtype convertible to the one shown); the GIL is released
while C++ runs, and Ctrl-C raises KeyboardInterrupt. Malformed input raises ValueError.
"""

import numpy.typing as npt

abi_version: int

class TooManyIdeals(RuntimeError):
    """``args == (message, count, limit)``: the lattice has more than ``limit`` ideals (at least ``count``)."""

def count_ideals(
    units: int, src: npt.ArrayLike, dst: npt.ArrayLike, limit: int
) -> tuple[int, int] | None:
    """``(ideals, covers)`` of the DAG on ``0..units-1``, or None when it has more than ``limit`` ideals."""

def solve(
    units: int,
    cpu_time: npt.ArrayLike,
    acc_time: npt.ArrayLike,
    memory: npt.ArrayLike,
    supported: npt.ArrayLike,
    edge_src: npt.ArrayLike,
    edge_dst: npt.ArrayLike,
    group_cost: npt.ArrayLike,
    group_source: npt.ArrayLike,
    group_ptr: npt.ArrayLike,
    group_target: npt.ArrayLike,
    accelerators: int,
    cpus: int,
    memory_cap: float,
    overlap: bool,
    threads: int,
    time_limit: float,
    max_ideals: int,
) -> dict[str, object]:
    """Run the max-load DP on a contracted graph (see ``exactplace.backends.contraction``).

    Returns a dict: ``status`` ("optimal", "infeasible", "time" or "interrupt"), ``value``
    (float), ``device`` (``np.ndarray`` of int64, one device per unit, or None), ``ideals``,
    ``covers``, ``pairs``, ``threads`` (int) and ``seconds_ideals``, ``seconds_dp`` (float).
    """

def memory_estimate(units: int, accelerators: int, cpus: int, ideals: int, covers: int) -> int:
    """Bytes ``solve`` allocates for a lattice of ``ideals`` ideals and ``covers`` cover pairs."""
