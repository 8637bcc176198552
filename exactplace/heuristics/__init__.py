"""Heuristic placers, used as baselines and warm starts; each registered with :func:`exactplace.solve`."""

from exactplace.heuristics import greedy as greedy
