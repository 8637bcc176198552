"""A progress indication for work that may take more than a few seconds."""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tqdm import tqdm


@contextmanager
def elapsed(description: str, *, limit: float | None = None, interval: float = 0.5) -> Iterator[None]:
    """Show ``description`` with a ticking elapsed-time counter on stderr while the block runs.

    With a finite ``limit`` (seconds) the counter is a bar filling towards it: a solve that
    runs to its time limit fills it, one that ends sooner leaves it part-way. The counter
    only shows on a terminal: in logs and pipes stderr stays free for the one error line a
    failing command prints.
    """
    if not sys.stderr.isatty():
        yield
        return
    cap = limit if limit is not None and math.isfinite(limit) else None
    layout = "{desc} {elapsed}" if cap is None else f"{{desc}} {{bar:20}} {{elapsed}} of {cap:.0f} s"
    bar = tqdm(desc=description, total=cap, bar_format=layout, file=sys.stderr, leave=False)
    stop = threading.Event()
    start = time.monotonic()

    def tick() -> None:
        while not stop.wait(interval):
            if cap is not None:
                bar.n = min(time.monotonic() - start, cap)
            bar.refresh()

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        bar.close()
