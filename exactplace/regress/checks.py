"""The checks a suite and a baseline share: each failure one InputFormatError naming the file and the field."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from exactplace.core.errors import InputFormatError

__all__ = ["is_number", "json_kind", "require", "sorted_names"]


def require(condition: bool, where: str, message: str) -> None:
    """InputFormatError ``where: message`` unless ``condition``."""
    if not condition:
        raise InputFormatError(f"{where}: {message}")


def sorted_names(keys: Iterable[Any]) -> list[str]:
    """Keys as sorted text, whatever their types (YAML keys may be numbers, dates, ...).

    >>> sorted_names([2, "a", 1])
    ['1', '2', 'a']
    """
    return sorted(str(key) for key in keys)


def is_number(value: Any, *, infinite: bool = False) -> bool:
    """A real number (not a boolean, not NaN) that a float holds, finite unless ``infinite``.

    >>> is_number(1.5), is_number(True), is_number(float("inf")), is_number(float("inf"), infinite=True)
    (True, False, False, True)
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return False
    return not math.isnan(number) and (infinite or math.isfinite(number))


def json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "nothing (null)"}
    return kinds.get(type(value), "a number")
