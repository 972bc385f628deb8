from __future__ import annotations

import pytest

from reuse.placement.errors import PlacementError
from reuse.placement.evaluation import (
    failure_table,
    figure_data,
    format_report,
    margins,
    run_grid,
    violation_table,
)


@pytest.fixture(scope="module")
def grid():
    return run_grid("tiny", seed=0)


def test_grid_runs_every_strategy_and_la_places_everything(grid):
    assert len(grid) == 2 * 4 * 1 * 5
    la = grid[grid.strategy == "aels+rp+la"]
    assert (la.status == "ok").all()
    assert set(grid.topo_class) == {"regular", "large"}


def test_tables_carry_paper_values_beside_ours(grid):
    vt = violation_table(grid)
    assert {"medium", "paper_medium", "paper_extra-large"} <= set(vt.columns)
    assert vt.loc[("large", "aels"), "paper_large"] == 100
    assert failure_table(grid).shape[0] == 10
    fd = figure_data(grid)
    assert {"time_mean", "al_mean", "evaluations"} <= set(fd.columns)
    m = margins(grid)
    assert (m.loc[(slice(None), "cloud-only"), "ratio"] > 1).all()
    text = format_report(grid)
    assert "Tables 5-7" in text and "paper" in text


def test_unknown_scale():
    with pytest.raises(PlacementError, match="unknown scale"):
        run_grid("huge")
