"""exactplace: exact placement of DNN graphs on accelerators and CPUs.

>>> import exactplace
>>> w = exactplace.read_workload(exactplace.workload_path("layer_bert24_inference"))
>>> exactplace.solve(w, method="greedy").status.value
'feasible'
"""

from exactplace.core.cluster import Cluster
from exactplace.core.errors import (
    CycleError,
    ExactplaceError,
    GraphError,
    InputFormatError,
    ParameterError,
    PlacementError,
    SolverUnavailableError,
    TooManyIdealsError,
)
from exactplace.core.graph import Graph, Node
from exactplace.core.io import Workload, read_split, read_workload, write_workload
from exactplace.core.placement import Limit, Placement, Space, Status
from exactplace.data import shipped_workloads, workload_path
from exactplace.evaluators import check_feasibility, device_loads, evaluate, is_contiguous, max_load
from exactplace.methods import available_methods, solve

__version__ = "0.1.0"

__all__ = [
    "Cluster", "CycleError", "ExactplaceError", "Graph", "GraphError", "InputFormatError",
    "Limit", "Node", "ParameterError", "Placement", "PlacementError", "SolverUnavailableError", "Space", "Status",
    "TooManyIdealsError", "Workload", "available_methods", "check_feasibility", "count_ideals",
    "device_loads", "evaluate", "is_contiguous", "max_load", "read_split", "read_workload",
    "sct_relaxation", "shipped_workloads", "solve", "workload_path", "write_workload",
]


def __getattr__(name: str) -> object:
    # count_ideals needs the native extension: load it on first use, so `import exactplace` stays light.
    if name == "count_ideals":
        from exactplace.backends.ideals import count_ideals

        return count_ideals
    # sct_relaxation solves an LP: its solver loads on first use only.
    if name == "sct_relaxation":
        from exactplace.backends.sct import sct_relaxation

        return sct_relaxation
    raise AttributeError(f"module 'exactplace' has no attribute {name!r}")
