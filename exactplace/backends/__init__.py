"""Exact backends (native DP, MIP formulations), each registered with :func:`exactplace.solve`.

Importing this package registers the backends; it imports no solver module.
"""
