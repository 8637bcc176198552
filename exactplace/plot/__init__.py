"""Pictures of placements, schedules and optimality gaps (matplotlib; ``pip install exactplace[plot]``).

Every function returns a matplotlib :class:`~matplotlib.figure.Figure` and never calls ``show()``:
a notebook displays the figure it gets, a script saves it (``fig.savefig("split.png")``). Figures
use the Agg backend's defaults, are sized for the page and read the same at 1,000 nodes as at 30.
``import exactplace`` does not import matplotlib; ``import exactplace.plot`` does.

- :func:`placement_graph`: the graph coloured by device, in layers from left to right;
- :func:`load_bars`: each device's load split into compute and communication (forward and
  backward for training), memory against capacity, the bottleneck marked;
- :func:`gantt`: one sample's schedule under the latency evaluator or the step simulator;
- :func:`gap_curve`: incumbent and bound against time, and the gap on a log scale;
- :func:`gap_bars`: each method's value over the best proven bound, per workload (the paper's Fig. 8);
- :func:`overview`: the placement graph above its load bars (``exactplace solve --plot``);
- :func:`against_baseline`: a regression report's values over its baseline's (``exactplace regress``);
- :func:`scaling_curve`: a sweep's time per sample against accelerators, per memory size (``exactplace sweep``).
"""

from exactplace.plot.baseline import against_baseline
from exactplace.plot.gaps import gap_bars, gap_curve
from exactplace.plot.graph import layered_layout, placement_graph
from exactplace.plot.loads import load_bars, overview
from exactplace.plot.scaling import scaling_curve
from exactplace.plot.schedule import gantt

__all__ = ["against_baseline", "gantt", "gap_bars", "gap_curve", "layered_layout", "load_bars", "overview",
           "placement_graph", "scaling_curve"]
