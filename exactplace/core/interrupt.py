"""How an uncaught Ctrl-C is reported: one line, not a page of traceback (the command line's promise)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType

__all__ = ["quiet_interrupt"]

Hook = Callable[[type[BaseException], BaseException, "TracebackType | None"], object]


def quiet_interrupt(previous: Hook) -> Hook:
    """An excepthook that reports an uncaught Ctrl-C in one line and leaves every other error to ``previous``."""

    def hook(kind: type[BaseException], value: BaseException, traceback: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            print("exactplace: interrupted", file=sys.stderr)
        else:
            previous(kind, value, traceback)

    return hook
