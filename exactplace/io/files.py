"""Reading input files: text or bytes, and JSON, every failure an InputFormatError naming the file.

The other modules of :mod:`exactplace.io` read through these, so that a missing, unreadable or
malformed file is reported in one line, whatever format it was meant to hold.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

from exactplace.core.errors import InputFormatError, ParameterError

__all__ = ["PathLike", "check_path", "load_json", "parse_json", "read_bytes", "read_text"]

PathLike = str | os.PathLike


def check_path(path: Any, function: str) -> None:
    # An int would be taken as a file descriptor by open(): refuse everything but real paths.
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise ParameterError(
            f"The 'path' parameter of {function} must be a str or os.PathLike file name. Got {path!r} instead."
        )


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, refusing a key given twice (json.loads would keep the last silently)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


class _DuplicateKey(ValueError):
    pass


def parse_json(text: str, what: str, source: str) -> Any:
    """Parse JSON text (from a file or standard input), turning every failure into InputFormatError.

    A key given twice in one object is an error naming it: the paper's format has no
    repeated fields, and keeping either value silently would solve another problem.

    >>> parse_json('{"maxFPGAs": 2, "maxFPGAs": 3}', "Workload", "file 'w.json'")
    Traceback (most recent call last):
    ...
    exactplace.core.errors.InputFormatError: Workload file 'w.json' gives the key 'maxFPGAs' twice in one object.
    """
    try:
        return json.loads(text.removeprefix("\ufeff"), object_pairs_hook=_unique_keys)  # (a UTF-8 BOM: no JSON)
    except _DuplicateKey as error:
        raise InputFormatError(f"{what} {source} gives the key {error.args[0]!r} twice in one object.") from None
    except json.JSONDecodeError as error:
        raise InputFormatError(
            f"{what} {source} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."
        ) from None
    except RecursionError:
        raise InputFormatError(f"{what} {source} nests JSON too deeply.") from None
    except ValueError as error:  # e.g. an integer literal with more digits than Python converts
        raise InputFormatError(f"{what} {source} is not valid JSON: {error}.") from None


def load_json(path: PathLike, what: str) -> Any:
    """Parse a JSON file, turning OS and syntax errors into InputFormatError."""
    return parse_json(read_text(path, what), what, f"file {os.fspath(path)!r}")


def read_text(path: PathLike, what: str) -> str:
    """A UTF-8 text file's content, turning OS and decoding errors into InputFormatError naming ``what``."""
    check_path(path, f"read_{what.lower()}")
    with _reading(path, what):
        with open(path, encoding="utf-8") as handle:
            return handle.read()


def read_bytes(path: PathLike, what: str) -> bytes:
    """A file's content as bytes (a binary format such as ONNX), turning OS errors into InputFormatError."""
    check_path(path, f"read_{what.lower()}")
    with _reading(path, what):
        with open(path, "rb") as handle:
            return handle.read()


@contextlib.contextmanager
def _reading(path: PathLike, what: str) -> Iterator[None]:
    """Turn the errors of reading ``path`` into InputFormatError naming ``what``."""
    try:
        yield
    except FileNotFoundError:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} does not exist.") from None
    except IsADirectoryError:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} is a directory.") from None
    except PermissionError:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} cannot be read (permission denied).") from None
    except UnicodeDecodeError:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} is not UTF-8 text.") from None
    except OSError as error:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} cannot be read: {error.strerror or error}.") from None

