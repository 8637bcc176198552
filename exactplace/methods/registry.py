"""The registry of placement methods behind :func:`exactplace.solve`.

Built-in methods come from the explicit catalog (:mod:`exactplace.methods.catalog`),
loaded on first use; :func:`register` adds a user's own :class:`~exactplace.methods.base.Method`
subclass. Availability is tested with :func:`importlib.util.find_spec`, so listing the
methods loads no solver.
"""

from __future__ import annotations

import importlib

import numpy as np

from exactplace.core.errors import ExactplaceError, ParameterError
from exactplace.core.objectives import OBJECTIVES, SCORE_ONLY
from exactplace.core.placement import Limit
from exactplace.core.problem import Problem
from exactplace.methods.base import Method
from exactplace.methods.catalog import BUILTIN_METHODS

__all__ = ["available_methods", "get_method", "register", "registered_methods", "start_from"]

_REGISTRY: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Add a method to the registry under ``cls.name`` (usable as a class decorator)."""
    registered_methods()  # built-ins first, so a user method cannot silently shadow one
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ParameterError(f"A method named {cls.name!r} is already registered.")
    unknown = set(cls.objectives) - set(OBJECTIVES)
    if unknown:
        raise ParameterError(f"Method {cls.name!r} declares unknown objectives {sorted(unknown)}.")
    _REGISTRY[cls.name] = cls
    return cls


def registered_methods() -> dict[str, type[Method]]:
    """Every registered method, available or not: the catalog's, in preference order, then the user's."""
    for name, target in BUILTIN_METHODS.items():
        if name not in _REGISTRY:
            module, _, attribute = target.partition(":")
            _REGISTRY[name] = getattr(importlib.import_module(module), attribute)
    return dict(_REGISTRY)


def available_methods(objective: str | None = None) -> list[str]:
    """Names of the methods whose modules are installed (for one objective, if given)."""
    return [
        name for name, cls in registered_methods().items()
        if cls.available() and (objective is None or objective in cls.objectives)
    ]


def get_method(name: str, objective: str) -> type[Method]:
    """The method class registered under ``name``, checked against ``objective`` (any method for ``SCORE_ONLY``)."""
    methods = registered_methods()
    if name not in methods:
        raise ParameterError(
            f"The 'method' parameter of solve must be one of {sorted([*methods, 'auto'])}. Got {name!r} instead."
        )
    cls = methods[name]
    if objective not in cls.objectives and objective not in SCORE_ONLY:
        raise ParameterError(
            f"Method {name!r} handles objective {' and '.join(cls.objectives)}, not {objective!r}; "
            f"methods for {objective!r}: {sorted(n for n, c in methods.items() if objective in c.objectives)}."
        )
    return cls


def start_from(name: str, problem: Problem) -> np.ndarray | None:
    """The placement registered method ``name`` finds for ``problem``, for another method to start from.

    None when the method is not installed, refuses the problem or does not suit its size
    (as ``method="auto"`` judges), fails, or finds nothing. This is how a method uses another
    as its warm start without importing it (bounds and exact methods never import a placer).
    A Ctrl-C that method handled (its result says ``Limit.INTERRUPT``) is raised again, as KeyboardInterrupt:
    it stops the method that asked, not only its start.
    """
    cls = registered_methods()[name]
    if not cls.available():
        return None
    try:
        cls.check(problem)
        if cls.unsuited(problem) is not None:
            return None
        result = cls().run(problem)
    except ExactplaceError:
        return None
    if result.limit is Limit.INTERRUPT:
        raise KeyboardInterrupt
    return result.device
