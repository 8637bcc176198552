"""Heuristic placers, used as baselines and warm starts; the catalog (:mod:`exactplace.methods.catalog`) lists them."""
