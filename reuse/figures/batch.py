"""Batch reproduction: run every notebook of a parameter set through papermill.

A parameter set (``experiments/params/<name>.yaml``) lists notebooks and their parameters::

    notebooks:
      - name: workload_riot
        path: notebooks/workload_riot.ipynb
        parameters: {RW_WALK: 100}

Each notebook runs with ``OUT_DIR`` pointed at ``<results>/<set>/figures``; the executed copies go
to ``<results>/<set>/notebooks``, and the ``summary_*.csv`` tables the notebooks write are gathered
into ``<results>/<set>/summary.md`` (each live table followed by what its columns decide:
:data:`reuse.figures.live.LIVE_NOTE`). A failing notebook stops the batch with a one-line error
naming the notebook and the failing cell.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from reuse.core.errors import ReuseError
from reuse.figures.live import LIVE_NOTE

__all__ = ["ROOT", "load_param_set", "run_batch", "write_summary", "markdown_table"]

ROOT = Path(__file__).resolve().parents[2]
#: how long a cell's outputs may take to arrive after the cell ran (nbclient's default, 4 s,
#: which papermill turns into an error, failed a planner notebook on a loaded machine,
#: 2026-11-29: the outputs were late, not missing)
IOPUB_TIMEOUT_S = 60


def load_param_set(name_or_path: str) -> tuple[str, list[dict[str, Any]]]:
    path = Path(name_or_path)
    if not path.suffix:
        path = ROOT / "experiments" / "params" / f"{name_or_path}.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReuseError(f"cannot read parameter set ({exc.strerror})", file=str(path)) from None
    except yaml.YAMLError as exc:
        raise ReuseError(f"not YAML ({str(exc).splitlines()[0]})", file=str(path)) from None
    items = data.get("notebooks") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise ReuseError("a parameter set needs a non-empty 'notebooks' list", file=str(path))
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "path" not in item:
            raise ReuseError(f"notebooks[{i}] needs a 'path'", file=str(path))
        item.setdefault("name", Path(item["path"]).stem)
        item.setdefault("parameters", {})
    return path.stem, items


def check_notebooks(items: list[dict[str, Any]]) -> None:
    """Read and validate every notebook of a set before any runs: a notebook broken by an edit
    is a one-line error naming it, not a traceback half an hour into the batch."""
    import nbformat

    for item in items:
        path = ROOT / item["path"]
        try:
            nb = nbformat.read(str(path), as_version=4)
            nbformat.validate(nb)
        except OSError as exc:
            raise ReuseError(f"cannot read notebook ({exc.strerror})", file=str(path)) from None
        except Exception as exc:  # noqa: BLE001 - nbformat's JSON and schema errors vary
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            raise ReuseError(f"is not a valid notebook ({first[:160]})", file=str(path)) from None


def run_batch(param_set: str, results: str | Path | None = None,
              progress: Callable[[str], None] = print, log_output: bool = False) -> Path:
    """Execute the set's notebooks in order; return the results folder."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    name, items = load_param_set(param_set)
    check_notebooks(items)
    out = Path(results) if results is not None else ROOT / "results" / name
    figures, executed = out / "figures", out / "notebooks"
    figures.mkdir(parents=True, exist_ok=True)
    executed.mkdir(parents=True, exist_ok=True)
    for n, item in enumerate(items, start=1):
        params = {"OUT_DIR": str(figures), **item["parameters"]}
        progress(f"[{n}/{len(items)}] {item['name']}: running {item['path']} {params}")
        start = time.monotonic()
        try:
            pm.execute_notebook(str(ROOT / item["path"]), str(executed / f"{item['name']}.ipynb"),
                                parameters=params, cwd=str(ROOT), progress_bar=False,
                                log_output=log_output, kernel_name="python3",
                                iopub_timeout=IOPUB_TIMEOUT_S)
        except PapermillExecutionError as exc:
            first = str(exc.evalue).splitlines()[0] if exc.evalue else ""
            raise ReuseError(f"failed in cell {exc.cell_index} (execution count {exc.exec_count}): "
                             f"{exc.ename}: {first}",
                             file=str(executed / f"{item['name']}.ipynb")) from None
        progress(f"[{n}/{len(items)}] {item['name']}: done in {time.monotonic() - start:.0f} s")
    summary = write_summary(figures, out / "summary.md")
    progress(f"figures and notebooks in {out}; summary table: {summary}")
    return out


def write_summary(figures: Path, path: Path) -> Path:
    """Gather the notebooks' summary tables (ours beside the paper's) into one markdown file."""
    parts = ["# Reproduction summary\n", "Generated by the batch run; ours beside the paper's.\n"]
    for csv in sorted(figures.glob("summary_*.csv")):
        df = pd.read_csv(csv).fillna("")
        parts.append(f"\n## {csv.stem.removeprefix('summary_').replace('_', ' ')}\n")
        parts.append(markdown_table(df))
        if csv.stem.startswith("summary_live_"):
            parts.append(LIVE_NOTE)
    pngs = sorted(p.name for p in figures.glob("*.png"))
    parts.append(f"\n{len(pngs)} figure panels: " + ", ".join(pngs) + "\n")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def markdown_table(df: pd.DataFrame) -> str:
    """A GitHub markdown table of ``df`` (floats to 3 decimals), without extra dependencies."""
    def fmt(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)
    head = "| " + " | ".join(df.columns) + " |"
    rule = "|" + "---|" * len(df.columns)
    rows = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *rows]) + "\n"
