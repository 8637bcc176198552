"""Typed access to the fields of a parsed JSON object, with errors that name the object and the field.

Every format of :mod:`exactplace.io` reads its objects through :class:`Fields`: a field of the
wrong type, out of range or unknown is refused in one line naming where it is.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection
from typing import Any

from exactplace.core.errors import InputFormatError
from exactplace.core.params import brief

__all__ = ["REQUIRED", "Fields", "shown"]


class Fields:
    """Typed access to one JSON object's fields, naming the object in every error."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise InputFormatError(f"{where} must be a JSON object. Got {type(data).__name__} instead.")
        self.data, self.where = data, where

    def only(self, known: Collection[str], *, free: Collection[str] = ()) -> None:
        """Refuse a field outside ``known`` and ``free`` (free-form annotations), naming the nearest known one.

        An unknown field is refused rather than ignored: a misspelt or unsupported one
        (``"interMachinecost"``, ``"speed"``) would otherwise solve another problem than the file states.
        """
        for key in self.data:
            if key in known or key in free or (free and isinstance(key, str) and key.startswith("_")):
                continue
            close = difflib.get_close_matches(str(key), list(known), n=1)
            if close:
                hint = f"did you mean {close[0]!r}?"
            else:
                hint = f"the fields are {', '.join(map(repr, known))}" + (
                    f"; free-form annotations may be named {', '.join(map(repr, sorted(free)))} or start with '_'"
                    if free else "")
            raise InputFormatError(f"{self.where} has an unknown field {shown(key)} ({hint}).")

    def _get(self, key: str, default: Any) -> Any:
        if key not in self.data:
            if default is REQUIRED:
                raise InputFormatError(f"{self.where} is missing the required field {key!r}.")
            return default
        return self.data[key]

    def number(self, key: str, default: Any = None, *, allow_inf: bool = False) -> float:
        """A finite, non-negative number (every number of the format is a time, a size or a cost);
        ``allow_inf`` also takes infinity (an unlimited memory), never NaN."""
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputFormatError(f"{self.where}: field {key!r} must be a number. Got {shown(value)} instead.")
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the largest float
            number = math.nan  # refused below even with allow_inf: the integer is not infinity
        if math.isnan(number) or (math.isinf(number) and not allow_inf) or number < 0:
            kind = "a non-negative number (inf for unlimited)" if allow_inf else "a finite, non-negative number"
            raise InputFormatError(f"{self.where}: field {key!r} must be {kind}. Got {shown(value)} instead.")
        return number

    def integer(self, key: str, default: Any = None, *, low: int = -(2**63), high: int = 2**63 - 1) -> int:
        value = self._get(key, default)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputFormatError(f"{self.where}: field {key!r} must be an integer. Got {shown(value)} instead.")
        if not low <= value <= high:
            raise InputFormatError(f"{self.where}: field {key!r} must be an integer in [{_limit(low)}, "
                                   f"{_limit(high)}]. Got {shown(value)} instead.")
        return value

    def optional_integer(self, key: str) -> int | None:
        return None if self.data.get(key) is None else self.integer(key)

    def boolean(self, key: str, default: Any = None) -> bool:
        value = self._get(key, default)
        if (value in (0, 1) and not isinstance(value, float)) or isinstance(value, bool):
            return bool(value)
        raise InputFormatError(f"{self.where}: field {key!r} must be a boolean or 0/1. Got {value!r} instead.")

    def array(self, key: str, default: Any = None) -> list:
        value = self._get(key, default)
        if not isinstance(value, list):
            raise InputFormatError(f"{self.where}: field {key!r} must be a list. Got {type(value).__name__} instead.")
        return value


#: The default of a field that must be given: :class:`Fields` refuses an object without it.
REQUIRED = object()


def _limit(bound: int) -> str:
    """A range end for a message: ``2**62``, ``2**63 - 1``, ``-2**63`` rather than their digits.

    >>> _limit(2**1000), _limit(2**63 - 1), _limit(-(2**63)), _limit(1)
    ('2**1000', '2**63 - 1', '-2**63', '1')
    """
    sign, size = ("-" if bound < 0 else ""), abs(bound)
    if size < 2**20:
        return str(bound)
    if size & (size - 1) == 0:
        return f"{sign}2**{size.bit_length() - 1}"
    if (size + 1) & size == 0:
        return f"{sign}2**{size.bit_length()} - 1"
    return str(bound)


def shown(value: Any) -> str:
    """A value for an error message, cut short (a JSON number may have thousands of digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return repr(brief(value))
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

