"""exactplace: exact placement of DNN graphs on accelerators and CPUs.

>>> import exactplace
>>> w = exactplace.read_workload(exactplace.workload_path("layer_bert24_inference"))
>>> exactplace.solve(w, method="greedy").status.value
'feasible'
"""

import sys as _sys

from exactplace.core.interrupt import quiet_interrupt as _quiet_interrupt

# Ctrl-C while the imports below run (they take a moment) must not print a page of traceback;
# the hook is put back once they are done, so importing exactplace changes nothing afterwards.
_previous_hook, _sys.excepthook = _sys.excepthook, _quiet_interrupt(_sys.excepthook)

from exactplace.core.cluster import Cluster  # noqa: E402
from exactplace.core.errors import (  # noqa: E402
    CycleError,
    ExactplaceError,
    GraphError,
    InputFormatError,
    ParameterError,
    PlacementError,
    ReplayError,
    SolverUnavailableError,
    TooLargeError,
    TooManyIdealsError,
)
from exactplace.core.graph import Graph, Node  # noqa: E402
from exactplace.core.placement import Limit, Placement, Space, Status  # noqa: E402
from exactplace.data import shipped_workloads, workload_path  # noqa: E402
from exactplace.evaluators import check_feasibility, device_loads, evaluate, is_contiguous, max_load  # noqa: E402
from exactplace.io import Workload, read_split, read_workload, write_workload  # noqa: E402
from exactplace.methods import available_methods, solve  # noqa: E402
from exactplace.methods.compare import compare  # noqa: E402

__version__ = "0.1.0"

_sys.excepthook = _previous_hook

__all__ = [
    "Cluster", "CycleError", "ExactplaceError", "Graph", "GraphError", "InputFormatError",
    "Limit", "Node", "ParameterError", "Placement", "PlacementError", "ReplayError", "SolverUnavailableError",
    "Space", "Status", "TooLargeError", "TooManyIdealsError", "Workload", "available_methods", "check_feasibility",
    "compare", "count_ideals",
    "device_loads", "evaluate", "from_torch", "is_contiguous", "max_load", "read_split", "read_workload",
    "replay", "sct_relaxation", "shipped_workloads", "solve", "workload_path", "write_workload",
]


#: Public functions whose modules need heavy imports (the native extension, an LP solver, torch):
#: loaded on first use, so ``import exactplace`` stays light.
_LAZY = {
    "count_ideals": "exactplace.methods.ideals",
    "sct_relaxation": "exactplace.bounds.sct",
    "replay": "exactplace.runtime",
    "from_torch": "exactplace.frontends.torch",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'exactplace' has no attribute {name!r}")
