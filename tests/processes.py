"""How the tests start the product in another process: as a user's shell does, from any folder.

The console script ``exactplace`` (installed beside this interpreter) is what users type; it puts no
working directory on ``sys.path``, so it runs the installed package even from the checkout's root,
whose ``exactplace/`` folder is the source tree. ``python -c`` and ``python -m`` do put the working
directory first: tests that need them run in a folder of their own (``cwd=``), as a user's script would.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

#: The command line as installed; ``python -m exactplace`` where no script was installed beside this interpreter.
EXACTPLACE = ([found] if (found := shutil.which("exactplace", path=sysconfig.get_path("scripts"))) else
              [sys.executable, "-m", "exactplace"])

#: The checkout's root: a folder holding the source tree, where the tests check the product still runs.
CHECKOUT = Path(__file__).resolve().parents[1]
