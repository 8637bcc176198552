"""Declared parameter constraints, validated one way everywhere (scikit-learn's ``_param_validation``).

A method declares each of its options as an :class:`Option` (name, constraint, default,
one line of doc); :func:`validate_options` checks a mapping of values against them and
raises :class:`~exactplace.core.errors.ParameterError` in the one message format of
:func:`~exactplace.core.errors.check_param`, so every entry point words a bad value alike.
numpy scalars count as the Python numbers they hold, booleans never count as numbers.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from exactplace.core.errors import check_param

__all__ = ["Boolean", "Choice", "Constraint", "Integer", "Option", "Real", "brief", "validate_options"]


class _Brief:
    """A value shown in an error message: its repr, cut short (a huge integer has hundreds of digits)."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        value = self.value
        if isinstance(value, (int, np.integer)) and not _is_bool(value) and abs(int(value)) >= 10**30:
            return f"an integer of {_digits(int(value))} digits"
        text = repr(value)
        return text if len(text) <= 80 else text[:77] + "..."


def _digits(value: int) -> int:
    """Decimal digits of a large integer, without ``str()`` (refused beyond 4300 digits)."""
    count = int(math.log10(abs(value))) + 1
    return count - 1 if abs(value) < 10 ** (count - 1) else count + (abs(value) >= 10**count)


def brief(value: object) -> object:
    """``value`` for :func:`~exactplace.core.errors.check_param`'s "Got ... instead", cut short.

    >>> brief(10**400), brief(2.5)
    (an integer of 401 digits, 2.5)
    """
    return _Brief(value)


def _is_bool(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


class Constraint(ABC):
    """What a value must be; ``str(constraint)`` completes "must be ..." in an error message."""

    @abstractmethod
    def accepts(self, value: object) -> bool:
        """True when ``value`` satisfies the constraint."""

    def __or__(self, other: Constraint) -> Constraint:
        return _AnyOf((self, other))


@dataclass(frozen=True)
class _AnyOf(Constraint):
    parts: tuple[Constraint, ...]

    def accepts(self, value: object) -> bool:
        return any(part.accepts(value) for part in self.parts)

    def __str__(self) -> str:
        return " or ".join(str(part) for part in self.parts)


class Boolean(Constraint):
    """True or False (numpy booleans too)."""

    def accepts(self, value: object) -> bool:
        return _is_bool(value)

    def __str__(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class Integer(Constraint):
    """An integer in ``[low, high]`` (either end may be None); Python or numpy integers, not booleans."""

    low: int | None = None
    high: int | None = None

    def accepts(self, value: object) -> bool:
        if _is_bool(value) or not isinstance(value, (int, np.integer)):
            return False
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)

    def __str__(self) -> str:
        return _range_text("an integer", self.low, self.high, True, True)


@dataclass(frozen=True)
class Real(Constraint):
    """A number (int or float, Python or numpy, not NaN) in the interval given by ``low``/``high``."""

    low: float | None = None
    high: float | None = None
    low_closed: bool = True
    high_closed: bool = True
    finite: bool = True

    def accepts(self, value: object) -> bool:
        if _is_bool(value) or not isinstance(value, (int, float, np.integer, np.floating)):
            return False
        try:
            x = float(value)
        except OverflowError:  # an integer beyond the largest float is no number a computation can use
            return False
        if math.isnan(x) or (self.finite and math.isinf(x)):
            return False
        if self.low is not None and (x < self.low or (x == self.low and not self.low_closed)):
            return False
        return self.high is None or x < self.high or (x == self.high and self.high_closed)

    def __str__(self) -> str:
        kind = "a finite number" if self.finite else "a number"
        return _range_text(kind, self.low, self.high, self.low_closed, self.high_closed)


@dataclass(frozen=True)
class Choice(Constraint):
    """One of a fixed set of values."""

    values: tuple[Any, ...]

    def accepts(self, value: object) -> bool:
        try:
            return value in self.values
        except TypeError:  # an unhashable or uncomparable value is simply not one of them
            return False

    def __str__(self) -> str:
        return f"one of {list(self.values)}"


def _range_text(kind: str, low: float | None, high: float | None, low_closed: bool, high_closed: bool) -> str:
    if low is not None and high is not None:
        return f"{kind} in {'[' if low_closed else '('}{low}, {high}{']' if high_closed else ')'}"
    if low is not None:
        return f"{kind} {'>=' if low_closed else '>'} {low}"
    if high is not None:
        return f"{kind} {'<=' if high_closed else '<'} {high}"
    return kind


@dataclass(frozen=True)
class Option:
    """One declared option of a method: its name, constraint, default and a line of doc."""

    name: str
    constraint: Constraint
    default: Any
    doc: str

    def __str__(self) -> str:
        return f"{self.name}: {self.constraint} (default {self.default!r}) — {self.doc}"


def validate_options(values: Mapping[str, Any], declared: Mapping[str, Option], function: str) -> None:
    """Check every entry of ``values`` against its declared :class:`Option` (unknown names are the caller's affair).

    Examples
    --------
    >>> threads = Option("threads", Integer(low=1), None, "worker threads")
    >>> validate_options({"threads": 2}, {"threads": threads}, "solve")
    >>> validate_options({"threads": 0}, {"threads": threads}, "solve")
    Traceback (most recent call last):
    ...
    exactplace.core.errors.ParameterError: The 'threads' parameter of solve must be an integer >= 1. Got 0 instead.
    """
    for name, value in values.items():
        option = declared.get(name)
        if option is not None:
            check_param(option.constraint.accepts(value), name, function, str(option.constraint), brief(value))
