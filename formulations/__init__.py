"""MIP formulations of the paper (latency MIP, max-load IP, SCT LP), installed beside ``exactplace``.

Each formulation will read top to bottom: variables, one named block per constraint
family (docstring with the math and the paper's equation number), objective; the
backends in ``exactplace.backends`` wrap them as ``solve()`` methods. None is
implemented yet: they are tracked as their own issues.
"""
