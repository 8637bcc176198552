"""The exception hierarchy of exactplace.

Every error raised at the boundary (reading a workload, building a graph,
validating a placement, calling :func:`exactplace.solve`) derives from
:class:`ExactplaceError`, so callers can catch one type; messages name the
node, edge or field at fault so the fix is obvious without a traceback.
"""

from __future__ import annotations


class ExactplaceError(Exception):
    """Base class of every error exactplace raises on purpose."""


class InputFormatError(ExactplaceError, ValueError):
    """A workload, split or plan file is malformed: bad JSON, missing field, wrong type."""


class GraphError(ExactplaceError, ValueError):
    """The graph itself is invalid: cycle, unknown node, duplicate id, bad value."""


class CycleError(GraphError):
    """The graph has a directed cycle; ``cycle`` lists one, as node ids."""

    def __init__(self, message: str, cycle: list[int]) -> None:
        super().__init__(message)
        self.cycle = cycle


class PlacementError(ExactplaceError, ValueError):
    """A placement does not match its graph or cluster (unknown node, unknown device, ...)."""


class InvocationCycleError(PlacementError):
    """A latency placement's accelerator subgraphs wait on each other in a cycle; ``devices`` lists the
    devices of one such cycle (accelerators and CPUs, device numbers)."""

    def __init__(self, message: str, devices: list[int]) -> None:
        super().__init__(message)
        self.devices = devices


class ParameterError(ExactplaceError, ValueError):
    """A function was called with an invalid parameter value."""


class SolverUnavailableError(ExactplaceError):
    """The requested method needs a module or extension that is not installed."""


class ContractError(ExactplaceError, AssertionError):
    """A placement method breaks the method contract (:func:`exactplace.testing.check_method`)."""


class ReplayError(ExactplaceError, RuntimeError):
    """A replay failed while it ran: a device worker raised (the original error is its ``__cause__``)."""


class TooLargeError(ExactplaceError):
    """The instance is beyond what the chosen method can take in memory or time (the message says what to use)."""


class TooManyIdealsError(TooLargeError):
    """The exact DP would need more ideals than the memory budget allows."""

    def __init__(self, message: str, count: int, limit: int) -> None:
        super().__init__(message)
        self.count = count
        self.limit = limit


def check_param(condition: bool, name: str, function: str, requirement: str, value: object) -> None:
    """Raise :class:`ParameterError` in the one message format used everywhere.

    >>> check_param(True, "time_limit", "solve", "a positive number", 3)
    >>> check_param(False, "gap", "solve", "a number in [0, 1)", 2)
    Traceback (most recent call last):
    ...
    exactplace.core.errors.ParameterError: The 'gap' parameter of solve must be a number in [0, 1). Got 2 instead.
    """
    if not condition:
        raise ParameterError(
            f"The {name!r} parameter of {function} must be {requirement}. Got {value!r} instead."
        )
