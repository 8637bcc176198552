"""The tuning of ``method="mip"``: one frozen :class:`MIPSettings`, :data:`DEFAULT_MIP` by default.

Its numbers say how the time limit is shared among the non-contiguous portfolio's phases
(:class:`~exactplace.methods.portfolio.NonContiguousPortfolio`), which solver ``"auto"`` takes, and how large a
program the method builds; the components' own tuning (the polish, the gap probe, the packing bound, the race)
are fields too, as those components' settings objects. The option help strings are built from
:data:`DEFAULT_MIP`. A run with other settings: ``ThroughputMIP(settings).run(problem)``, or, through
:func:`~exactplace.solve`, :attr:`MIP.settings <exactplace.methods.mip.MIP.settings>` replaced by one of
``dataclasses.replace(DEFAULT_MIP, ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from exactplace.bounds.gap_probe import DEFAULT_GAP_PROBE, GapProbeSettings
from exactplace.bounds.packing import DEFAULT_PACKING, PackingSettings
from exactplace.improvers.polish import DEFAULT_POLISH, PolishSettings
from exactplace.improvers.race import DEFAULT_RACE, RaceSettings

__all__ = ["DEFAULT_MIP", "MIPSettings"]


@dataclass(frozen=True)
class MIPSettings:
    """How ``method="mip"`` spends its time and what it builds (module docstring)."""

    max_nonzeros: int = 2_000_000
    """The largest program (estimated nonzeros) the method builds: beyond, building it alone takes longer than a
    useful time limit, and no solver reaches a useful bound. Such an input is refused at once, saying what to use
    instead."""
    default_time_limit: float = 60.0
    """Seconds a MIP runs when the caller gave no ``time_limit`` (hard instances never close their gap);
    ``time_limit=float("inf")`` runs until the gap is proven."""
    highs_max_accelerators: int = 3
    """``solver="auto"`` runs the non-contiguous IP on HiGHS on at most this many accelerators, else on CP-SAT:
    on few accelerators HiGHS's cuts lift the bound where CP-SAT's stays at the LP's; on more, CP-SAT is ahead."""
    cpsat_leg_seconds: float = 60.0
    """The relay: ``solver="auto"`` on more than :attr:`highs_max_accelerators` accelerators, with more time than
    this left when the IP starts, gives CP-SAT the IP's first this many seconds, then hands its split and bound to
    HiGHS for the rest: CP-SAT is fast to good splits and to the proofs it finds; where its bound stays at the
    LP's, HiGHS's branching and cuts still move it."""
    packing_seconds: float = 30.0
    """At most this many seconds go to the packing relaxation's bound before a non-contiguous solve ..."""
    packing_fraction: float = 0.05
    """... and at most this fraction of the time left (the packing phase delays the IP itself)."""
    polish_seconds: float = 30.0
    """At most this many seconds go to polishing the warm start before a non-contiguous solve ..."""
    polish_fraction: float = 0.1
    """... and at most this fraction of the time left after the packing phase ..."""
    polish_bounded_fraction: float = 0.25
    """... or this fraction where ``L``'s lower bound is proven already: the polish, one search per thread, ends
    once its split is certified by that bound, so the time is spent only where it has not got there."""
    set_bound_fraction: float = 0.85
    """In the relay, after CP-SAT's leg, this fraction of the time left goes to the device-set relaxation's bound
    (HiGHS's leg, with the polish beside it, gets the rest): the relaxation needs long to reach its limit, which can
    lie above what HiGHS's bound on the assignment IP reaches."""
    probe_seconds: float = 30.0
    """At most this many seconds go to the gap probe after the polish ..."""
    probe_fraction: float = 0.1
    """... and at most this fraction of the time left then."""
    min_phase_seconds: float = 0.05
    """A phase before the non-contiguous IP is skipped when its share of the time is this little."""
    latency_cpsat_workers: int = 8
    """The latency program's CP-SAT workers when ``threads`` is not given: its portfolio needs several even on two
    cores."""
    path_bound_fraction: float = 0.25
    """The latency program's path DP gets at most this fraction of the time left: its bound, when it comes, is
    worth more than the solver's time."""
    polish: PolishSettings = DEFAULT_POLISH
    """The polish's own tuning (:mod:`exactplace.improvers.polish`)."""
    gap_probe: GapProbeSettings = DEFAULT_GAP_PROBE
    """The gap probe's own tuning (:mod:`exactplace.bounds.gap_probe`)."""
    packing: PackingSettings = DEFAULT_PACKING
    """The packing bound's own tuning (:mod:`exactplace.bounds.packing`)."""
    race: RaceSettings = DEFAULT_RACE
    """The race's (:mod:`exactplace.improvers.race`)."""


#: The tuning ``solve(method="mip")`` runs with.
DEFAULT_MIP = MIPSettings()
