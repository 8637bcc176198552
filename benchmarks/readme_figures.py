"""Make the pictures the README shows, with ``exactplace.plot`` (run it again after changing a picture).

Each is drawn at the width the README shows it (880 pixels, a GitHub README's column), so its
text is read at the size it is written. Run: ``python benchmarks/readme_figures.py``.
"""

from __future__ import annotations

from pathlib import Path

import exactplace as ep
from exactplace import plot

FIGURES = Path(__file__).resolve().parent / "figures"
SHOWN_WIDTH = 8.8  # inches at 100 dpi: 880 pixels


def main() -> None:
    FIGURES.mkdir(exist_ok=True)
    w = ep.read_workload(ep.workload_path("op_bert3_inference"))
    figure = plot.overview(w, ep.solve(w))
    height = figure.get_size_inches()[1]
    figure.set_size_inches(SHOWN_WIDTH, height * 1.1)
    path = FIGURES / "op_bert3_inference_overview.png"
    figure.savefig(path, dpi=100)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
