"""The one explicit catalog of built-in methods (cvxpy's ``defines.py``).

``BUILTIN_METHODS`` maps each method name to ``"module:Class"``; the module is imported
only when the method is listed or used, and importing it loads no solver. ``AUTO_ORDER``
is ``method="auto"``'s preference order per objective: the first available method that
takes the given options, accepts the problem and suits its size is used.
"""

from __future__ import annotations

__all__ = ["AUTO_ORDER", "BUILTIN_METHODS"]

BUILTIN_METHODS: dict[str, str] = {
    "dp": "exactplace.methods.dp:DP",
    "dpl": "exactplace.methods.dp:DPL",
    "bb": "exactplace.methods.bounded:BoundedSearch",
    "schedule-dp": "exactplace.methods.schedule_dp:ScheduleDP",
    "schedule-mip": "exactplace.methods.schedule_mip:ScheduleMIP",
    "greedy": "exactplace.heuristics.greedy:Greedy",
    "mip": "exactplace.methods.mip:MIP",
    "m-topo": "exactplace.heuristics.m_topo:MTopo",
    "m-etf": "exactplace.heuristics.m_etf:METF",
    "m-sct": "exactplace.heuristics.m_sct:MSCT",
    "fastt": "exactplace.heuristics.fastt:FastT",
    "celeritas": "exactplace.heuristics.celeritas:Celeritas",
    "celeritas-order-place": "exactplace.heuristics.celeritas:CeleritasOrderPlace",
    "local-search": "exactplace.heuristics.local_search:LocalSearch",
    "pipedream": "exactplace.heuristics.pipedream:PipeDream",
    "metis": "exactplace.heuristics.metis:Metis",
}

AUTO_ORDER: dict[str, tuple[str, ...]] = {
    # Past the DP's ideals, the bounded search over the same chain splits when a trial run
    # certifies (wide graphs); else the contiguous IP (warm-started by DPL), which certifies some
    # branchy graphs neither does; past its size limit DPL answers alone, with no bound.
    # Under a pipeline schedule the others refuse the option; the schedule methods refuse any other problem.
    "throughput": ("dp", "bb", "mip", "dpl", "greedy", "schedule-dp", "schedule-mip"),
    "latency": ("mip", "greedy"),
    "makespan": ("m-etf",),
}
