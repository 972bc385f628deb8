"""Static PNG rendering (what a papermill batch run shows instead of the widget)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from matplotlib.image import imread

from reuse.core.dataflow import Dataflow
from reuse.core.traces import load_trace
from reuse.figures.batch import IOPUB_TIMEOUT_S
from reuse.viz import Timeline, draw_scene, png_size, render_data, save_png

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def timeline(figure1: dict[str, Dataflow]) -> Timeline:
    return Timeline(figure1, load_trace(FIXTURES / "figure1-trace.json"))


@pytest.mark.parametrize("step", [0, 3, 5])
def test_png_written_with_the_right_size(timeline: Timeline, figure1: dict[str, Dataflow],
                                         tmp_path: Path, step: int) -> None:
    scene = render_data(timeline[step], figure1, total_steps=timeline.steps)
    path = save_png(scene, tmp_path / "out" / f"step{step}.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    img = imread(path)
    assert (img.shape[1], img.shape[0]) == png_size(scene)
    assert img.shape[1] >= 720  # room for the title and legend even when empty
    if step:
        # not a blank canvas: the state colours are there
        assert len({tuple(px) for px in img.reshape(-1, img.shape[2])[::7]}) > 50


def test_png_dpi_scales(timeline: Timeline, tmp_path: Path) -> None:
    scene = render_data(timeline[3])
    img = imread(save_png(scene, tmp_path / "hi.png", dpi=200))
    w, h = png_size(scene)
    assert (img.shape[1], img.shape[0]) == png_size(scene, dpi=200) == (2 * w, 2 * h)


def test_figure_has_title_counts_and_legend(timeline: Timeline) -> None:
    scene = render_data(timeline[3], total_steps=5)
    fig = draw_scene(scene)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "step 3/5: submit C" in texts and timeline[3].summary in texts
    assert texts.count("3") == 3 and texts.count("2") == 1  # A.src/parse/kalman, B.slr
    legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert any(s.startswith("reused") for s in legend) and len(legend) == 5


def test_papermill_batch_run_keeps_pngs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a batch run the widget is lost but ``static=True`` and ``image()`` leave PNGs."""
    import nbformat
    import papermill

    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from reuse.viz.sources import Paths\nfrom reuse.viz.widget import Visualizer\n"
        f"viz = Visualizer(paths=Paths.default({str(root)!r}), static=True)\n"
        "viz.slider.value = 3\nviz"),
        nbformat.v4.new_code_cell("viz.image(5)")]
    nbformat.write(nb, tmp_path / "in.ipynb")
    papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"),
                               kernel_name="python3", cwd=str(tmp_path), progress_bar=False,
                               iopub_timeout=IOPUB_TIMEOUT_S)
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    first = [o.get("data", {}) for o in out.cells[0].outputs]
    assert any("application/vnd.jupyter.widget-view+json" in d for d in first)
    assert any("image/png" in d for d in first)
    assert "image/png" in out.cells[1].outputs[0]["data"]
