"""What-if sweeps with certified answers: ``exactplace sweep`` and :func:`sweep`.

- :func:`sweep`: a certified optimum (or a bound and gap) for every cluster of a grid of accelerator counts, memory
  sizes and bandwidths, the cells solved helping the others (:mod:`exactplace.sweep.grid`), here or on Ray;
- :func:`fewest_accelerators`: the fewest accelerators whose optimum reaches a target time per sample;
- :func:`least_memory`: the least memory per accelerator that keeps an optimum (or reaches a target).

:func:`exactplace.plot.scaling_curve` draws a sweep: time per sample against accelerators, one line per memory
size, with the ideal linear speed-up beside it.
"""

from exactplace.sweep.grid import CELL_FIELDS, SweepInterrupted, cells_json, sweep
from exactplace.sweep.inverse import Answer, fewest_accelerators, least_memory

__all__ = ["CELL_FIELDS", "Answer", "SweepInterrupted", "cells_json", "fewest_accelerators", "least_memory", "sweep"]
