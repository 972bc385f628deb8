"""The widget's logic without a kernel: controls, stepping, selection, panels, static output."""

from __future__ import annotations

from pathlib import Path

import pytest

from reuse.viz.sources import Paths
from reuse.viz.widget import SceneView, Visualizer


@pytest.fixture
def viz() -> Visualizer:
    return Visualizer("figure1", "file")


def test_initial_state(viz: Visualizer) -> None:
    assert viz.slider.max == viz.play.max == 5 and viz.slider.value == 0
    assert viz.show_submitted.value  # Figure 1 is small enough to show the submitted DAGs
    assert "step 0/5" in viz.scene.svg and "Click a task" in viz.details.value
    assert isinstance(viz.scene, SceneView) and viz.scene._esm


def test_stepping_redraws(viz: Visualizer) -> None:
    viz.slider.value = 3
    assert "step 3/5: submit C" in viz.scene.svg
    assert viz.scene.svg.count("data-task=") == 9
    assert "Step 3 of 5: submit C" in viz.delta.value
    viz.slider.value = 4
    assert viz.scene.svg.count("data-task=") == 14


def test_click_shows_details_and_follows_steps(viz: Visualizer) -> None:
    viz.slider.value = 3
    viz.scene.selected = "B.slr"  # what the front-end does on a click
    html = viz.details.value
    assert "SlidingLinearRegression" in html and "<code>B</code>, <code>C</code>" in html
    assert '<span class="reuse-count">2</span>' in html
    viz.slider.value = 5
    assert 'class="task state-running selected" data-task="B.slr"' in viz.scene.svg
    assert '<span class="reuse-count">1</span>' in viz.details.value
    viz.select("B.out")
    assert "stopped" in viz.details.value and "served dataflows" in viz.details.value


def test_switching_workload_and_trace(viz: Visualizer) -> None:
    viz.trace_kind.value = "seq"
    assert viz.slider.max == 8 and viz.slider.value == 0
    if Paths.default().riot.is_dir():
        viz.workload.value = "riot"
        assert viz.slider.max == 42 and not viz.show_submitted.value
        assert "21 dataflows" in viz.status.value


def test_bad_workload_path_reported(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "no", tmp_path / "no.json", tmp_path / "no", tmp_path / "no")
    v = Visualizer("figure1", paths=paths)
    assert "cannot load figure1" in v.status.value and v.timeline is None


def test_static_output_for_batch_runs(viz: Visualizer, tmp_path: Path) -> None:
    path = viz.save_png(tmp_path / "s3.png", step=3)
    assert path.stat().st_size > 5000
    texts = [t.get_text() for ax in viz.figure(3).axes for t in ax.texts]
    assert "step 3/5: submit C" in texts
