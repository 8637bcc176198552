"""SALBP-2 instances (simple assembly line balancing, type 2) as exactplace workloads.

The ``.alb`` format (Otto et al. 2013, https://assembly-line-balancing.de/) lists
``<number of tasks>``, optionally ``<cycle time>`` (SALBP-1) or ``<number of stations>``
(SALBP-2), ``<task times>`` (``task time`` per line, tasks numbered from 1) and
``<precedence relations>`` (``i,j`` per line), ending with ``<end>``. SALBP-2 with m stations is
exactplace's chain-split max-load problem on m identical accelerators with no CPU, no memory
limit and no communication: tasks become nodes (accelerator time = task time), precedences
become edges of cost 0.

The Otto SALBP-2 sets (``jordipereiragude/salbp2instances``, ``generateOtto.sh``) take the first
``n`` tasks of an instance (the precedences among them) and ``m = n * i // 100`` stations for
``i`` in 10, 15, ..., 60: :func:`otto_station_counts`. The classical Scholl (1993) SALBP-2 set
(302 instances, 17 precedence graphs of 29 to 297 tasks, ``scholl/*.IN2``) pairs each graph with
the station counts its ``generateScholl.sh`` lists: :func:`parse_in2`, :func:`scholl_station_counts`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AlbInstance", "otto_station_counts", "parse_alb", "parse_in2", "read_alb", "scholl_station_counts",
           "workload_dict"]


@dataclass(frozen=True)
class AlbInstance:
    """A parsed ``.alb`` file: task times (task ``i + 1`` at index ``i``), precedences (1-based) and,
    when the file states them, the cycle time (SALBP-1) or the number of stations (SALBP-2)."""

    times: tuple[int, ...]
    precedences: tuple[tuple[int, int], ...]
    cycle_time: int | None = None
    stations: int | None = None

    @property
    def tasks(self) -> int:
        """The number of tasks."""
        return len(self.times)

    def subset(self, tasks: int) -> AlbInstance:
        """The first ``tasks`` tasks and the precedences among them (as ``otto.c`` subsets)."""
        if not 1 <= tasks <= self.tasks:
            raise ValueError(f"cannot take {tasks} of {self.tasks} tasks")
        kept = tuple((i, j) for i, j in self.precedences if i <= tasks and j <= tasks)
        return AlbInstance(self.times[:tasks], kept, self.cycle_time, self.stations)


def parse_alb(text: str) -> AlbInstance:
    """Parse the text of an ``.alb`` file.

    >>> a = parse_alb("<number of tasks>\\n3\\n<number of stations>\\n2\\n<task times>\\n1 4\\n2 5\\n3 6\\n"
    ...               "<precedence relations>\\n1,2\\n1,3\\n<end>\\n")
    >>> a.times, a.precedences, a.stations
    ((4, 5, 6), ((1, 2), (1, 3)), 2)
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("<") and line.endswith(">"):
            tag = line[1:-1].strip().lower()
            if tag == "end":
                break
            current = sections.setdefault(tag, [])
        elif line and current is not None:
            current.append(line)
    n = int(sections["number of tasks"][0])
    times = [0] * n
    for line in sections.get("task times", []):
        task, time = line.split()
        times[int(task) - 1] = int(time)
    precedences = []
    for line in sections.get("precedence relations", []):
        i, j = (int(x) for x in line.split(","))
        precedences.append((i, j))

    def single(tag: str) -> int | None:
        values = sections.get(tag)
        return int(values[0]) if values else None

    return AlbInstance(tuple(times), tuple(precedences), single("cycle time"), single("number of stations"))


def parse_in2(text: str) -> AlbInstance:
    """Parse a classical ``.IN2`` file: the number of tasks, one task time per line, then ``i,j``
    precedences up to ``-1,-1`` (what follows is commentary).

    >>> parse_in2("3\\n4\\n5\\n6\\n1,2\\n1,3\\n-1,-1\\n(notes)\\n").precedences
    ((1, 2), (1, 3))
    """
    lines = iter(line.strip() for line in text.splitlines() if line.strip())
    n = int(next(lines))
    times = tuple(int(next(lines)) for _ in range(n))
    precedences = []
    for line in lines:
        i, j = (int(x) for x in line.split(","))
        if i == -1:
            break
        precedences.append((i, j))
    return AlbInstance(times, tuple(precedences))


def scholl_station_counts(script: str) -> list[tuple[str, int]]:
    """The (graph, stations) pairs of the Scholl SALBP-2 set, read from ``generateScholl.sh``.

    >>> scholl_station_counts("for i in {7..9}\\ndo\\n    ./in2alb scholl/BUXEY.IN2 x ${i}\\ndone\\n")
    [('BUXEY', 7), ('BUXEY', 8), ('BUXEY', 9)]
    """
    loops = re.findall(r"for i in \{(\d+)\.\.(\d+)\}\s*do\s*\./in2alb scholl/([\w-]+)\.IN2", script)
    return [(graph, m) for low, high, graph in loops for m in range(int(low), int(high) + 1)]


def read_alb(path: str | Path) -> AlbInstance:
    """Read an ``.alb`` file."""
    return parse_alb(Path(path).read_text())


def otto_station_counts(tasks: int) -> list[int]:
    """The station counts of the Otto SALBP-2 set for ``tasks`` tasks: ``tasks * i // 100``, i = 10..60 by 5.

    >>> otto_station_counts(20)
    [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    """
    return [tasks * i // 100 for i in range(10, 61, 5)]


def workload_dict(instance: AlbInstance, stations: int | None = None) -> dict:
    """The exactplace workload (``workload_from_dict``'s input) of SALBP-2 on ``stations`` stations.

    Task ``i`` becomes node ``i`` with accelerator time = task time (CPU time the same; there is no
    CPU), size 0; precedence ``i, j`` the edge ``i -> j`` of cost 0; the cluster ``stations``
    accelerators with unlimited memory and no CPU. ``stations`` defaults to the file's own.

    >>> w = workload_dict(AlbInstance((4, 5), ((1, 2),)), stations=2)
    >>> w["maxFPGAs"], w["maxCPUs"], [n["fpgaLatency"] for n in w["nodes"]], w["edges"][0]["destId"]
    (2, 0, [4.0, 5.0], 2)
    """
    m = stations if stations is not None else instance.stations
    if m is None or m < 1:
        raise ValueError("the number of stations is neither given nor stated in the file")
    nodes = [{"id": i + 1, "supportedOnFpga": 1, "cpuLatency": float(t), "fpgaLatency": float(t),
              "isBackwardNode": 0, "size": 0.0} for i, t in enumerate(instance.times)]
    edges = [{"sourceId": i, "destId": j, "cost": 0.0} for i, j in instance.precedences]
    return {"maxSizePerFPGA": math.inf, "maxFPGAs": m, "maxCPUs": 0, "nodes": nodes, "edges": edges}
