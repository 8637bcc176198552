"""Mathematical programs for placement (installed as ``exactplace.formulations``).

Each formulation reads top to bottom: a docstring with the program's equations, variables, one
named block per constraint family, the objective, and a decoder from a solution to a device array.
Models only: solving them is the solver adapters' job (``exactplace.solvers``). Inside this
package, import siblings relatively.

The modules: ``model`` (the solver-neutral form); the max-load IPs: ``units`` (what they share),
``decoding`` (the built IP, decode and encode), ``throughput`` (contiguous; re-exports the rest),
``noncontiguous``, ``two_level``; their bounds: ``throughput_bounds`` (packing relaxation),
``device_sets``; and ``latency``, ``sct``, ``packing`` (memory bin packing).
"""
