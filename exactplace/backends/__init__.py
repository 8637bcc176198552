"""Exact backends (native DP, MIP formulations), each registered with :func:`exactplace.solve`.

Importing this package registers the backends; it imports no solver module.
"""

from exactplace.backends import dp as dp  # registers "dp" and "dpl"; the native module loads only when they run
