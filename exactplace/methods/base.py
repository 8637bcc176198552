"""The :class:`Method` base class: what a placement method declares (the objectives it handles,
the options it takes, what it guarantees) and the one function it implements, ``run``.

A method is given a :class:`~exactplace.core.problem.Problem` and returns a
:class:`~exactplace.core.problem.MethodResult`; the built-in methods are listed in
:mod:`exactplace.methods.catalog`.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from exactplace.core.params import Integer, Option
from exactplace.core.placement import Space
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.feasibility import Guarantees

__all__ = ["THREADS", "Method", "usable_cpus"]


def usable_cpus() -> int:
    """The CPU cores this process may use (its affinity mask where the OS has one)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: The ``threads`` option, shared by every method that runs worker threads (default: the usable cores).
THREADS = Option("threads", Integer(low=1, high=1024), None, "worker threads (default: the usable CPU cores)")


class Method(ABC):
    """One placement method. Subclasses set the class attributes and implement :meth:`run`.

    Attributes
    ----------
    name : str
        The name ``solve(method=...)`` takes.
    objectives : tuple of str
        The objectives it optimizes (from :data:`exactplace.core.objectives.OBJECTIVES`).
    exact : bool
        True when it proves optimality over its ``space``.
    space : Space or None
        The placements it searches (None for heuristics).
    guarantee : Guarantees
        What its placements always satisfy beyond memory, support and colocation; the
        referee checks exactly this on every result.
    requires : tuple of str
        Modules it needs; availability is tested without importing them.
    engine : str
        What runs it (``"python"``, ``"native-dp"``), the result's ``solver`` unless the run names another.
    options : mapping of str to Option
        The method-specific options it takes, with their constraints and defaults.
    schedules : bool
        True when it optimizes under a pipeline schedule (``solve(schedule=..., microbatches=...)``);
        the others are refused one.
    device_rules : bool
        True when it holds the constraints lowering leaves as rules (``Problem.rules``: pins to one
        device, forbidden devices, ``max_stages`` on accelerators that differ); the others are refused them.
    """

    name: ClassVar[str]
    objectives: ClassVar[tuple[str, ...]]
    exact: ClassVar[bool] = False
    space: ClassVar[Space | None] = None
    guarantee: ClassVar[Guarantees] = Guarantees()
    requires: ClassVar[tuple[str, ...]] = ()
    engine: ClassVar[str] = "python"
    description: ClassVar[str] = ""
    options: ClassVar[Mapping[str, Option]] = {}
    schedules: ClassVar[bool] = False
    device_rules: ClassVar[bool] = False

    @classmethod
    def missing(cls) -> list[str]:
        """The modules in ``requires`` that cannot be imported (checked without importing them)."""
        missing = []
        for module in cls.requires:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(module)
        return missing

    @classmethod
    def available(cls) -> bool:
        """True when every module in ``requires`` is installed."""
        return not cls.missing()

    @classmethod
    def check(cls, problem: Problem) -> None:
        """Raise ParameterError when the method cannot handle this problem's options or cluster.

        Called for an explicitly chosen method; under ``method="auto"`` the message is the
        reason the method is passed over. By default every problem is accepted.
        """
        return

    @classmethod
    def unsuited(cls, problem: Problem) -> str | None:
        """Why ``method="auto"`` should pass over this method on ``problem`` (too large, ...), or None."""
        return None

    @classmethod
    def outlook(cls, problem: Problem) -> str:
        """What to expect of a run on ``problem`` that ``unsuited`` accepted: how it ends, roughly how long."""
        return "exact; no estimate of its time" if cls.exact else "a heuristic: a split with no bound"

    @classmethod
    def promises(cls, problem: Problem) -> Guarantees:
        """What this run's placement will satisfy (``guarantee`` unless an option changes it)."""
        return cls.guarantee

    @classmethod
    def setting(cls, problem: Problem, name: str) -> Any:
        """The value of one of the method's own options: the given one, else its declared default."""
        return problem.options.get(name, cls.options[name].default)

    @abstractmethod
    def run(self, problem: Problem) -> MethodResult:
        """Solve ``problem``; honour ``problem.deadline`` and KeyboardInterrupt."""
