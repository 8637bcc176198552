"""Loading the C++ extension ``exactplace._native`` and talking to it in one place.

The extension is built from ``dp_native/`` when exactplace is installed. An extension left
over from an older build (a stale ``.so`` in an editable install) would be called with
arguments it does not understand, so :func:`load` checks its ``abi_version`` first and says
how to rebuild it instead of failing somewhere inside.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from exactplace.core.errors import SolverUnavailableError

__all__ = ["ABI_VERSION", "load", "request"]

#: The interface version of ``exactplace._native`` this Python code speaks (module.cpp sets it).
ABI_VERSION = 9

_REBUILD = "rebuild it with `pip install -e .` (or `python setup.py build_ext --inplace`) in the source tree"


def load() -> ModuleType:
    """The native module, after checking that it is built and speaks :data:`ABI_VERSION`.

    Raises
    ------
    SolverUnavailableError
        Not built, or built from other sources (the message says how to rebuild it).

    Examples
    --------
    >>> native = load()
    >>> native.abi_version == ABI_VERSION
    True
    """
    try:
        from exactplace import _native
    except ImportError as error:
        raise SolverUnavailableError(
            f"The native extension exactplace._native is not built ({error}); {_REBUILD}."
        ) from None
    found = getattr(_native, "abi_version", None)
    if found != ABI_VERSION:
        raise SolverUnavailableError(
            f"The native extension exactplace._native has ABI version {found!r}, but this exactplace "
            f"needs version {ABI_VERSION}: it was built from other sources; {_REBUILD}."
        )
    return _native


def request(**fields: Any) -> Any:
    """A ``_native.Request`` with the given fields (unit arrays, cluster, limits); the rest keep defaults.

    Defaults: no edges, no communication groups, ``time_limit=inf``, ``threads=1``,
    ``max_ideals=2**30 - 1``, no ``order`` (the general DP over every ideal), no accelerator
    types (``type_count``, ``type_memory``, ``type_speed``: one type, speed 1).

    Examples
    --------
    >>> r = request(units=1, cpu_time=[2.0], acc_time=[1.0], memory=[0.0], supported=[1], accelerators=1, cpus=1)
    >>> out = load().solve(r)
    >>> out.status.name, out.value, out.device.tolist()
    ('optimal', 1.0, [0])
    """
    native = load()
    r = native.Request()
    defaults = {"edge_src": [], "edge_dst": [], "group_cost": [], "group_source": [], "group_ptr": [0],
                "group_target": [], "threads": 1, "max_ideals": 2**30 - 1, "time_limit": math.inf,
                "memory_cap": math.inf, "overlap": False}
    for name, value in {**defaults, **fields}.items():
        if not hasattr(r, name):
            raise TypeError(f"_native.Request has no field {name!r}")
        setattr(r, name, value)
    return r
