"""Ctrl-C: how an uncaught one is reported (one line, not a page of traceback: the command line's promise), and
how a phase of decision solves keeps one from being lost; and the other stop event of a solve, a value reached."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import TracebackType

__all__ = ["ctrl_c_sets", "handled_interrupt", "quiet_interrupt", "sets_at_most", "stop_as_ctrl_c"]

Hook = Callable[[type[BaseException], BaseException, "TracebackType | None"], object]


def quiet_interrupt(previous: Hook) -> Hook:
    """An excepthook that reports an uncaught Ctrl-C in one line and leaves every other error to ``previous``."""

    def hook(kind: type[BaseException], value: BaseException, traceback: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            print("exactplace: interrupted", file=sys.stderr)
        else:
            previous(kind, value, traceback)

    return hook


def handled_interrupt() -> None:
    """Say that a Ctrl-C caught here was handled, so that the process ends with the status its code chooses.

    CPython marks a KeyboardInterrupt that leaves an ``exec`` of a *string* (``PyRun_String``: dataclasses and
    named tuples define their methods so when their module is imported) as uncaught, even where a caller then
    catches it, and at exit kills the process with SIGINT (bpo-1054041's "exit properly after an uncaught ^C")
    whatever status it chose. Seen: Ctrl-C landing while a solve imported the set bound lazily (a dataclass) made
    ``exactplace solve`` print its best plan and "interrupted", then die by SIGINT instead of exiting 130. Every
    ``exec`` of a string starts by clearing that mark; an empty one clears it and does nothing else.

    >>> import os, signal
    >>> try:
    ...     exec("os.kill(os.getpid(), signal.SIGINT); sum(range(9))")
    ... except KeyboardInterrupt:
    ...     handled_interrupt()
    """
    exec("pass")  # for its side effect on that mark


#: The events of the ``ctrl_c_sets`` blocks open on the main thread, innermost last (for :func:`stop_as_ctrl_c`).
_PHASES: list[threading.Event] = []


@contextlib.contextmanager
def ctrl_c_sets(event: threading.Event | None = None) -> Iterator[threading.Event]:
    """Within the block, Ctrl-C (SIGINT) sets ``event`` (a new one when None; the block gets it) rather than raising
    KeyboardInterrupt; the previous handler is restored on leaving. (Off the main thread, where no handler can be
    set, nothing changes; a SIGINT the process was started ignoring, as a background job is, stays ignored.)

    For a phase of decision solves whose solver adapters all stop on ``event``: an adapter that gets Ctrl-C while it
    proves a decision infeasible returns that status with no interrupt mark (the proof stands), which would hide the
    Ctrl-C from the phase; the event does not.

    >>> import os, signal
    >>> with ctrl_c_sets() as stop:
    ...     os.kill(os.getpid(), signal.SIGINT)
    >>> stop.is_set()
    True
    """
    event = event if event is not None else threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield event
        return
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    previous = None if ignored else signal.signal(signal.SIGINT, lambda *_: event.set())
    _PHASES.append(event)
    try:
        yield event
    finally:
        _PHASES.remove(event)
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def stop_as_ctrl_c() -> None:
    """Stop what runs now as Ctrl-C stops it, for another signal's handler (SIGTERM's): within a ``ctrl_c_sets``
    block, set its event (the phase's solves stop on it; raising KeyboardInterrupt there would stop one solve of the
    phase, which then goes on); elsewhere raise KeyboardInterrupt. Whether or not SIGINT itself is ignored.

    >>> with ctrl_c_sets() as stop:
    ...     stop_as_ctrl_c()
    >>> stop.is_set()
    True
    """
    if _PHASES:
        _PHASES[-1].set()
    else:
        raise KeyboardInterrupt


def sets_at_most(threshold: float, event: threading.Event) -> Callable[[float], None]:
    """A listener of a search's values (max loads, each as it is found) that sets ``event`` at the first at most
    ``threshold``: say, the first split a bound proven elsewhere certifies, where the search may stop.

    >>> stop = threading.Event()
    >>> heard = sets_at_most(2.0, stop)
    >>> heard(3.0); stop.is_set()
    False
    >>> heard(2.0); stop.is_set()
    True
    """

    def heard(value: float) -> None:
        if value <= threshold:
            event.set()

    return heard
