"""What a replay returns: measured against predicted (:class:`ReplayResult`), and the replay modes."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MODES", "ReplayResult"]

#: ``"pipelined"``: samples stream through the devices (time per sample); ``"single"``: one sample (latency).
MODES = ("pipelined", "single")


@dataclass(frozen=True)
class ReplayResult:
    """Measured against predicted, per device and overall, in the workload's time units.

    Attributes
    ----------
    mode : str
        ``"pipelined"`` (time per sample) or ``"single"`` (one sample's latency).
    measured, predicted, ratio : float
        Overall: the median over repeats of the measured value, the evaluator's value, and
        measured / predicted.
    per_device : dict
        Device name -> (measured busy time per sample, predicted load), in model units. A replicated
        device's busy time is its replicas' together divided by their count (its load's unit).
    repeats : tuple of float
        The overall measurement of every repeat (model units): their spread is the noise.
    time_unit : float
        Seconds per model time unit used by the replay.
    devices : str
        What ran it: ``"cpu:3"`` (virtual devices) or ``"cuda:2"``, counting one per replica.
    outputs : object
        Real-module replays only: the outputs of the split module (last sample).
    """

    mode: str
    measured: float
    predicted: float
    per_device: dict[str, tuple[float, float]]
    repeats: tuple[float, ...]
    time_unit: float
    devices: str
    samples: int
    outputs: Any = field(default=None, repr=False)

    @property
    def ratio(self) -> float:
        """measured / predicted."""
        return self.measured / self.predicted if self.predicted else float("nan")

    @property
    def noise(self) -> float:
        """Relative spread of the repeats: (max - min) / median; 0 with one repeat."""
        if len(self.repeats) < 2:
            return 0.0
        return (max(self.repeats) - min(self.repeats)) / statistics.median(self.repeats)

    def to_frame(self) -> pd.DataFrame:
        """One row per device plus ``overall``: measured, predicted, ratio (model units)."""
        import pandas as pd  # here: ``import exactplace`` stays light

        rows = {name: values for name, values in self.per_device.items()}
        rows["overall"] = (self.measured, self.predicted)
        frame = pd.DataFrame.from_dict(rows, orient="index", columns=["measured", "predicted"])
        frame["ratio"] = frame["measured"] / frame["predicted"].where(frame["predicted"] > 0)
        frame.index.name = "device"
        return frame

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (what ``exactplace replay --json`` prints)."""
        return {
            "mode": self.mode, "measured": self.measured, "predicted": self.predicted, "ratio": self.ratio,
            "noise": self.noise, "repeats": list(self.repeats), "samples": self.samples,
            "time_unit": self.time_unit, "devices": self.devices,
            "per_device": {k: {"measured": m, "predicted": p} for k, (m, p) in self.per_device.items()},
        }
