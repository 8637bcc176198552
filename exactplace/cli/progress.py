"""A progress indication for work that may take more than a few seconds."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm


@contextmanager
def elapsed(description: str, *, interval: float = 0.5) -> Iterator[None]:
    """Show ``description`` with a ticking elapsed-time counter on stderr while the block runs.

    The counter only shows on a terminal: in logs and pipes stderr stays free for the one
    error line a failing command prints.
    """
    if not sys.stderr.isatty():
        yield
        return
    bar = tqdm(desc=description, bar_format="{desc} {elapsed}", file=sys.stderr, leave=False)
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(interval):
            bar.refresh()

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        bar.close()
