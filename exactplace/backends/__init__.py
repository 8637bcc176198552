"""Exact backends (native DP, MIP formulations); the catalog (:mod:`exactplace.methods.catalog`) lists them."""
