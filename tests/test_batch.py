"""The papermill batch: every notebook with tiny parameters, and a failing notebook's error."""

from __future__ import annotations

import nbformat
import pytest

from reuse.batch import run_batch
from reuse.errors import ReuseError
from reuse.workloads.registry import data_dir

pytestmark = pytest.mark.skipif(not (data_dir() / "riotbench").is_dir(),
                                reason="data/ not set up (run scripts/setup.sh)")


@pytest.mark.spark
def test_tiny_batch_produces_every_planner_panel_and_summary(tmp_path):
    lines: list[str] = []
    out = run_batch("tiny", tmp_path / "res", progress=lines.append)
    pngs = sorted(p.name for p in (out / "figures").glob("fig[24]_*.png"))
    assert len(pngs) == 12  # Figures 2 and 4 for 2 workloads x 3 traces
    assert all((out / "figures" / p).stat().st_size > 5000 for p in pngs)
    summary = (out / "summary.md").read_text()
    assert "| riot | seq |" in summary and "138 -> 75" in summary
    assert any("[1/6] workload_opmw" in line for line in lines)
    # the billing notebook: bills per dataflow for every workload and trace, and the arrivals
    assert len(list((out / "figures").glob("bills_*_*.png"))) == 6
    assert len(list((out / "figures").glob("arrivals_*.png"))) == 2
    assert "## billing riot" in summary and "| riot | seq | shapley |" in summary
    # the placement notebook: the paper's grid figures and the reuse-trace comparison
    assert (out / "figures" / "placement_tiny" / "fig6_regular_latency.png").exists()
    assert (out / "figures" / "placement_trace_riot_seq.png").exists()
    assert "placement trace" in summary
    # the live notebook: a real Spark run per mode, Figure 3, and clean event accounting
    assert (out / "figures" / "fig3_riot_seq.png").stat().st_size > 5000
    live = [line for line in summary.splitlines() if line.startswith("| riot | seq |") and "->" in line]
    assert live, summary
    import pandas as pd
    row = pd.read_csv(out / "figures" / "summary_live_riot.csv").iloc[0]
    assert row["lost"] == 0 and row["duplicated"] == 0
    # the visualizer notebook: a static snapshot of the widget's scene
    assert (out / "figures" / "viz_figure1_file_step4.png").stat().st_size > 5000
    executed = nbformat.read(out / "notebooks" / "workload_riot.ipynb", as_version=4)
    assert any(c.get("outputs") for c in executed.cells if c.cell_type == "code")


def test_failing_notebook_stops_with_its_name_and_cell(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("OUT_DIR = '.'")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("x = 1"),
                nbformat.v4.new_code_cell("raise ValueError('boom')")]
    nbformat.write(nb, tmp_path / "bad.ipynb")
    (tmp_path / "set.yaml").write_text(f"notebooks:\n  - name: bad\n    path: {tmp_path / 'bad.ipynb'}\n")
    with pytest.raises(ReuseError) as info:
        run_batch(str(tmp_path / "set.yaml"), tmp_path / "res", progress=lambda s: None)
    msg = str(info.value)
    assert "bad.ipynb" in msg and "ValueError: boom" in msg and "cell" in msg and "\n" not in msg


def test_bad_parameter_set_is_one_line(tmp_path):
    (tmp_path / "p.yaml").write_text("notebooks: 3\n")
    with pytest.raises(ReuseError, match="needs a non-empty 'notebooks' list"):
        run_batch(str(tmp_path / "p.yaml"), tmp_path / "r")
