"""Static PNG rendering (what a papermill batch run shows instead of the widget)."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.image import imread

from reuse.dataflow import Dataflow
from reuse.traces import load_trace
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
