"""How the tests start the product in another process: as a user's shell does, from any folder.

The console script ``exactplace`` (installed beside this interpreter) is what users type; it puts no
working directory on ``sys.path``, so it runs the installed package even from the checkout's root,
whose ``exactplace/`` folder is the source tree. ``python -c`` and ``python -m`` do put the working
directory first: tests that need them run in a folder of their own (``cwd=``), as a user's script would.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
from pathlib import Path

#: The command line as installed; ``python -m exactplace`` where no script was installed beside this interpreter.
EXACTPLACE = ([found] if (found := shutil.which("exactplace", path=sysconfig.get_path("scripts"))) else
              [sys.executable, "-m", "exactplace"])

#: The checkout's root: a folder holding the source tree, where the tests check the product still runs.
CHECKOUT = Path(__file__).resolve().parents[1]


def run_ranks(script: str, world: int, cwd: Path) -> list[dict]:
    """Run ``script`` (``python -c``) as ranks ``0..world-1`` of a local process group (MASTER_ADDR and
    MASTER_PORT, RANK, LOCAL_RANK, WORLD_SIZE set); each rank's last line of output, parsed as JSON."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ranks = [subprocess.Popen([sys.executable, "-c", script], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                                              "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world)})
             for rank in range(world)]
    found = []
    for rank, process in enumerate(ranks):
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, f"rank {rank}: {err[-3000:]}"
        found.append(json.loads(out.strip().splitlines()[-1]))
    return found
