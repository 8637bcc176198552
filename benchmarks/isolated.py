"""One benchmark case per fresh Python process, so that its peak resident memory is its own.

A benchmark script runs itself as ``script --child JSON`` for each case; the child prints its facts
as one JSON line (with :func:`peak_mb` for the memory) and the parent reads them back with
:func:`run_isolated`.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys


def peak_mb() -> float:
    """This process's peak resident memory in MB (``ru_maxrss``, which Linux reports in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_isolated(script: str, spec: dict) -> dict:
    """Run ``script --child spec`` in a fresh interpreter and return the JSON object of its last output line."""
    out = subprocess.run([sys.executable, script, "--child", json.dumps(spec)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])
