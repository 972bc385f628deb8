"""The papermill batch: every notebook with tiny parameters, and a failing notebook's error."""

from __future__ import annotations

import csv

import nbformat
import pytest
import yaml

from reuse.core.errors import ReuseError
from reuse.core.paths import data_dir
from reuse.figures.batch import check_notebooks, load_param_set, run_batch, write_summary
from reuse.figures.traces import planner_figures
from reuse.testing import ROOT, missing
from reuse.workloads.registry import load_workload

pytestmark = pytest.mark.skipif(not (data_dir() / "riotbench").is_dir(),
                                reason=missing("data", "data/ not set up (run scripts/setup.sh)"))


def _table_rows(summary: str, section: str) -> list[dict[str, str]]:
    """The rows of the markdown table under ``## <section>`` of a summary.md, by column name."""
    lines = summary.split(f"\n## {section}\n", 1)[1].strip().splitlines()
    table = []
    for line in lines:  # the section's first table only (later sections have their own)
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table]
    header, body = cells[0], cells[2:]  # cells[1] is the |---| rule
    return [dict(zip(header, row, strict=True)) for row in body]


def _check_planner_peak(summary: str, plan_csv) -> None:
    """The summary's RIoT SEQ peak is the one measured in the plan CSV, not the paper's figure."""
    rows = list(csv.DictReader(plan_csv.open()))
    peak = max(rows, key=lambda r: int(r["default_tasks"]))  # the step with most DAGs running
    row = next(r for r in _table_rows(summary, "planner riot") if r["trace"] == "seq")
    assert (row["peak_default"], row["peak_reuse"]) == (peak["default_tasks"], peak["reuse_tasks"])
    assert row["paper_peak"] == "138 -> 75"  # the paper's figure sits beside ours, in its column


def test_summary_peak_is_the_measured_one(tmp_path, literal_classes):
    """Without Spark: the planner notebook's steps (figures, CSVs) and the batch's summary.md."""
    flows = load_workload("riot")
    planner_figures("riot", flows, tmp_path, traces=("seq",))
    summary = write_summary(tmp_path, tmp_path / "summary.md").read_text()
    _check_planner_peak(summary, tmp_path / "plan_riot_seq.csv")
    row = next(r for r in _table_rows(summary, "planner riot") if r["trace"] == "seq")
    # and that measured peak is all 21 DAGs' tasks vs the literal <-> classes among them
    assert int(row["peak_default"]) == sum(len(f.tasks) for f in flows)
    assert int(row["peak_reuse"]) == literal_classes(flows)


def _tiny(tmp_path, *, live: bool) -> str:
    """The tiny parameter set's notebooks that run Spark (``live``: the live notebook) or the
    others, as a parameter set of their own. The suite runs them apart: the planner notebooks
    are CPU work beside the Spark tests, the live one among them (issue 34, item 5)."""
    _, items = load_param_set("tiny")
    chosen = [i for i in items if (i["name"] == "live_riot") == live]
    assert chosen
    path = tmp_path / f"tiny-{'live' if live else 'planner'}.yaml"
    path.write_text(yaml.safe_dump({"notebooks": chosen}))
    return str(path)


@pytest.mark.notebooks
def test_tiny_batch_produces_every_planner_panel_and_summary(tmp_path):
    lines: list[str] = []
    out = run_batch(_tiny(tmp_path, live=False), tmp_path / "res", progress=lines.append)
    pngs = sorted(p.name for p in (out / "figures").glob("fig[24]_*.png"))
    assert len(pngs) == 18  # Figures 2 and 4 for 3 workloads (2 + riot-tenants) x 3 traces
    assert all((out / "figures" / p).stat().st_size > 5000 for p in pngs)
    summary = (out / "summary.md").read_text()
    _check_planner_peak(summary, out / "figures" / "plan_riot_seq.csv")
    assert any("[1/8] workload_opmw" in line for line in lines)
    # the tenants notebook: exact vs semantic, its table, and the figures shown inline
    assert [r["trace"] for r in _table_rows(summary, "tenants")] == ["seq", "rw1", "rw2"]
    tenants = nbformat.read(out / "notebooks" / "tenants.ipynb", as_version=4)
    assert sum("image/png" in o.get("data", {}) for c in tenants.cells if c.cell_type == "code"
               for o in c.outputs) == 2
    # the billing notebook: bills per dataflow for every workload and trace, and the arrivals
    assert len(list((out / "figures").glob("bills_*_*.png"))) == 6
    assert len(list((out / "figures").glob("arrivals_*.png"))) == 2
    assert "## billing riot" in summary and "| riot | seq | shapley |" in summary
    # the blast-radius notebook: worst-case lost dataflows per step, and its summary row
    assert (out / "figures" / "fig_blast_riot_seq.png").stat().st_size > 5000
    assert "## blast riot" in summary and "| riot | seq | 4 | 1 | 2 |" in summary
    # the placement notebook: the paper's grid figures and the reuse-trace comparison
    assert (out / "figures" / "placement_tiny" / "fig6_regular_latency.png").exists()
    assert (out / "figures" / "placement_trace_riot_seq.png").exists()
    assert "placement trace" in summary
    # the visualizer notebook: a static snapshot of the widget's scene
    assert (out / "figures" / "viz_figure1_file_step4.png").stat().st_size > 5000
    executed = nbformat.read(out / "notebooks" / "workload_riot.ipynb", as_version=4)
    assert any(c.get("outputs") for c in executed.cells if c.cell_type == "code")


@pytest.mark.spark
def test_tiny_live_notebook_draws_figure_3_with_clean_accounting(tmp_path):
    """The live notebook: a real Spark run per mode, Figure 3, and clean event accounting."""
    out = run_batch(_tiny(tmp_path, live=True), tmp_path / "res", progress=lambda s: None)
    assert (out / "figures" / "fig3_riot_seq.png").stat().st_size > 5000
    summary = (out / "summary.md").read_text()
    live = [line for line in summary.splitlines() if line.startswith("| riot | seq |") and "->" in line]
    assert live, summary
    import pandas as pd
    rows = pd.read_csv(out / "figures" / "summary_live_riot.csv")
    assert (rows["lost"] == 0).all() and (rows["duplicated"] == 0).all()
    # the shared-query Reuse is compared with Default on the same engine
    assert rows.set_index("mode").loc["reuse-inplace", "baseline"] == "default-inplace"


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


def test_every_notebook_is_valid_and_a_broken_one_is_one_line(tmp_path):
    items = [{"path": str(p.relative_to(ROOT))} for p in sorted((ROOT / "notebooks").glob("*.ipynb"))]
    assert len(items) >= 8
    check_notebooks(items)  # every committed notebook reads and validates
    broken = tmp_path / "broken.ipynb"
    text = (ROOT / items[0]["path"]).read_text()
    broken.write_text(text.replace('"source": [', '"source": [\n"x\ny",', 1))  # a raw newline
    with pytest.raises(ReuseError, match="is not a valid notebook") as err:
        check_notebooks([{"path": str(broken)}])
    assert str(broken) in str(err.value) and "\n" not in str(err.value)
