"""The tutorial notebooks in ``notebooks/`` run end to end and draw their pictures.

Each notebook is executed with nbclient on the ``python3`` kernel (ipykernel's, the test
environment's interpreter), with a short solver time limit (``EXACTPLACE_TIME_LIMIT``) and its
figures written to a temporary folder (``EXACTPLACE_FIGURES``); the test checks that no cell
fails and that every expected PNG is there, readable and of a sensible size. The notebooks are
committed without outputs, which is checked without running anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

#: Every notebook, and the pictures it saves (file names under EXACTPLACE_FIGURES).
FIGURES = {
    "01_quickstart.ipynb": ["01_overview.png", "01_greedy_loads.png"],
    "02_optimality_gaps.ipynb": ["02_gaps_layer_bert24_inference.png", "02_gaps_layer_bert24_training.png",
                                 "02_gaps_op_bert3_inference.png", "02_gaps_any_split.png", "02_gaps_makespan.png"],
    "03_latency.ipynb": ["03_gap_curve.png", "03_latency_vs_baselines.png", "03_gap_curve_q.png", "03_gantt_q1.png",
                         "03_gantt_q2.png"],
    "04_pytorch.ipynb": ["04_load_bars.png", "04_comparison.png", "04_replay.png"],
    "05_explain_and_sweep.ipynb": ["05_scaling.png", "05_scaling_model.png"],
}

#: Notebooks that need an optional package beyond the test extra.
NEEDS = {"04_pytorch.ipynb": ("torch", "transformers", "deepspeed", "accelerate"),
         "05_explain_and_sweep.ipynb": ("torch",)}

#: Seconds each solver run may take in the notebooks under test (a person gets 60 by default).
TIME_LIMIT = "2"

#: Seconds one cell may take before nbclient stops the notebook.
CELL_TIMEOUT = 180

#: Pixel sizes a saved figure must have: the plot module draws about 10 inches wide at 100 dpi.
WIDTH_PX = (500, 1600)
HEIGHT_PX = (200, 1200)


def test_every_notebook_is_listed() -> None:
    """A notebook added to the folder must be added here, with its pictures, to be executed."""
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(FIGURES)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_notebook_is_committed_without_outputs(name: str) -> None:
    notebook = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    assert notebook["metadata"]["kernelspec"]["name"] == "python3"
    for number, cell in enumerate(notebook["cells"], start=1):
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"{name}: cell {number} has outputs (clear them before committing)"
            assert cell["execution_count"] is None, f"{name}: cell {number} has an execution count"


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_notebook_documents_its_settings(name: str) -> None:
    """The first cell says which environment variables the notebook reads."""
    first = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["cells"][0]
    text = "".join(first["source"])
    assert first["cell_type"] == "markdown"
    assert "EXACTPLACE_TIME_LIMIT" in text and "EXACTPLACE_FIGURES" in text


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_notebook_runs_and_draws_its_figures(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("nbclient", "nbformat", "ipykernel", "matplotlib"):
        pytest.importorskip(module)
    for module in NEEDS.get(name, ()):
        pytest.importorskip(module)
    import matplotlib.image
    import nbformat
    from nbclient import NotebookClient

    import exactplace

    figures = tmp_path / "figures"
    # The kernel inherits this environment: the settings, and whatever makes exactplace importable.
    monkeypatch.setenv("EXACTPLACE_TIME_LIMIT", TIME_LIMIT)
    monkeypatch.setenv("EXACTPLACE_FIGURES", str(figures))
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    # First, in memory only: the kernel must import the exactplace these tests import.
    notebook.cells.insert(0, nbformat.v4.new_code_cell(
        f"import exactplace\nassert exactplace.__file__ == {exactplace.__file__!r}, exactplace.__file__"))
    client = NotebookClient(notebook, kernel_name="python3", timeout=CELL_TIMEOUT,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, naming the cell, when one fails

    # A cell ending in a figure shows it (no %matplotlib inline needed): some output is a PNG.
    shown = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])
             if "image/png" in output.get("data", {})]
    assert shown, f"{name}: no cell displayed a figure"
    written = sorted(p.name for p in figures.iterdir()) if figures.is_dir() else []
    assert written == sorted(FIGURES[name])
    for picture in FIGURES[name]:
        pixels = matplotlib.image.imread(figures / picture)
        height, width = pixels.shape[:2]
        assert WIDTH_PX[0] <= width <= WIDTH_PX[1], f"{picture}: {width} px wide"
        assert HEIGHT_PX[0] <= height <= HEIGHT_PX[1], f"{picture}: {height} px high"
        assert pixels[..., :3].std() > 0.05, f"{picture}: (nearly) blank"
