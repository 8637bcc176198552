"""The registry of placement methods behind :func:`exactplace.solve`.

Each backend is one small class (cvxpy's adapter pattern): it declares its name, the
objectives it handles, whether it is exact, and the modules it needs; availability is
tested with :func:`importlib.util.find_spec`, so importing exactplace loads no solver.
A backend registers itself with :func:`register`; ``solve`` never changes.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ParameterError
from exactplace.core.graph import Graph
from exactplace.core.placement import Status

__all__ = ["Method", "MethodResult", "Problem", "available_methods", "get_method", "register", "registered_methods"]

OBJECTIVES = ("throughput", "latency")


@dataclass(frozen=True)
class Problem:
    """What a method is asked to solve; options are already validated by ``solve``.

    ``deadline`` is a ``time.monotonic()`` instant (None: no time limit); methods stop
    by then and return their best placement with ``limit="time"``.
    """

    graph: Graph
    cluster: Cluster
    objective: str
    deadline: float | None = None
    gap: float = 0.01
    warm_start: np.ndarray | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class MethodResult:
    """What a method returns; ``solve`` turns it into a :class:`Placement`.

    The objective is deliberately absent: ``solve`` recomputes it with the evaluator.
    """

    device: np.ndarray | None
    status: Status
    bound: float | None = None
    limit: str | None = None
    solver: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


class Method(ABC):
    """One placement method. Subclasses set the class attributes and implement :meth:`run`."""

    name: ClassVar[str]
    objectives: ClassVar[tuple[str, ...]]
    exact: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    option_names: ClassVar[tuple[str, ...]] = ()
    contiguous: ClassVar[bool] = True
    """Whether the method's placements are contiguous (Definition 3.1); ``solve`` checks it."""

    @classmethod
    def available(cls) -> bool:
        """True when every module in ``requires`` can be imported (checked without importing)."""
        return all(importlib.util.find_spec(module) is not None for module in cls.requires)

    @classmethod
    def suitable(cls, problem: Problem) -> bool:
        """Whether ``method="auto"`` should pick this method for ``problem`` (e.g. few enough ideals)."""
        return True

    @abstractmethod
    def run(self, problem: Problem) -> MethodResult:
        """Solve ``problem``; honour ``problem.deadline`` and KeyboardInterrupt."""


_REGISTRY: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator adding a method to the registry under ``cls.name``."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"A method named {cls.name!r} is already registered.")
    unknown = set(cls.objectives) - set(OBJECTIVES)
    if unknown:
        raise ValueError(f"Method {cls.name!r} declares unknown objectives {sorted(unknown)}.")
    _REGISTRY[cls.name] = cls
    return cls


def _load_builtin_methods() -> None:
    # Importing the packages runs their @register decorators; solver modules stay unimported.
    import exactplace.backends
    import exactplace.heuristics  # noqa: F401


def registered_methods() -> dict[str, type[Method]]:
    """Every registered method, available or not."""
    _load_builtin_methods()
    return dict(_REGISTRY)


def available_methods(objective: str | None = None) -> list[str]:
    """Names of the methods whose modules are installed (for one objective, if given)."""
    return [
        name for name, cls in registered_methods().items()
        if cls.available() and (objective is None or objective in cls.objectives)
    ]


def get_method(name: str, objective: str) -> type[Method]:
    """The method class registered under ``name``, checked against ``objective``."""
    methods = registered_methods()
    if name not in methods:
        raise ParameterError(
            f"The 'method' parameter of solve must be one of {sorted([*methods, 'auto'])}. Got {name!r} instead."
        )
    cls = methods[name]
    if objective not in cls.objectives:
        raise ParameterError(
            f"Method {name!r} handles objective {' and '.join(cls.objectives)}, not {objective!r}; "
            f"methods for {objective!r}: {sorted(n for n, c in methods.items() if objective in c.objectives)}."
        )
    return cls
