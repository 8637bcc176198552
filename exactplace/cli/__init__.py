"""The ``exactplace`` command line (a stable contract for scripts).

Importing it makes an uncaught Ctrl-C print one line instead of a traceback (the command
line's promise; exit status 130), even while the rest of the command line is still loading.
"""

import sys

from exactplace.core.interrupt import quiet_interrupt

sys.excepthook = quiet_interrupt(sys.excepthook)
