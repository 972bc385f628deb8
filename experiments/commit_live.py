"""Commit the paper's live protocol (Figure 3): ``docs/live/`` and ``docs/figures/fig3_*.png``.

``python experiments/commit_live.py --results results/protocol --log protocol.log``

The runs themselves come from ``./scripts/reproduce.sh protocol`` (parameter set
``experiments/params/protocol.yaml``: both SEQ traces, every DAG, 10 events/s, 15 s steps,
Default and Reuse on the shared query), which writes per-mode CSVs and the notebooks' summary
to ``results/protocol/figures``. This script copies the CSVs (small) into ``docs/live/``,
redraws Figure 3 from them with the library's plot (``reuse.figures.traces.plot_cores``), and writes
``docs/live/summary.md``: the command, the parameters, the time each notebook took (from the
batch log's ``done in N s`` lines) and the summary table beside the paper's figures.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from reuse.figures.batch import ROOT, markdown_table  # noqa: E402
from reuse.figures.traces import plot_cores  # noqa: E402

DPI = 80


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--results", default=str(ROOT / "results" / "protocol"))
    p.add_argument("--log", default=None, help="the batch's output (for the time taken)")
    p.add_argument("--out", default=str(ROOT / "docs" / "live"))
    p.add_argument("--figures", default=str(ROOT / "docs" / "figures"))
    args = p.parse_args(argv)
    src, out, figs = Path(args.results) / "figures", Path(args.out), Path(args.figures)
    out.mkdir(parents=True, exist_ok=True)
    params = yaml.safe_load((ROOT / "experiments" / "params" / "protocol.yaml").read_text())
    took: dict[str, int] = {}
    if args.log:
        for m in re.finditer(r"\] (\S+): done in (\d+) s", Path(args.log).read_text()):
            took[m.group(1)] = int(m.group(2))
    parts = ["# The paper's live protocol on this machine (Figure 3)\n",
             "Made by `./scripts/reproduce.sh protocol` (parameter set "
             "`experiments/params/protocol.yaml`), then `python experiments/commit_live.py "
             "--results results/protocol --log <the batch's output>`. 2 cores, `local[2]`.\n"]
    summaries = []
    for item in params["notebooks"]:
        prm = item["parameters"]
        w = prm["WORKLOAD"]
        runs = {}
        for mode in prm["MODES"]:
            csv = src / f"live_{w}_seq_{mode}.csv"
            if not csv.exists():
                print(f"commit_live: missing {csv}", file=sys.stderr)
                return 1
            shutil.copy(csv, out / csv.name)
            runs[mode] = pd.read_csv(csv)
        fig, ax = plt.subplots(figsize=(6.4, 3.6))
        plot_cores(runs, ax, w, "seq")
        fig.tight_layout()
        fig.savefig(figs / f"fig3_{w}_seq.png", dpi=DPI)
        plt.close(fig)
        summary = pd.read_csv(src / f"summary_live_{w}.csv")
        shutil.copy(src / f"summary_live_{w}.csv", out / f"summary_live_{w}.csv")
        summaries.append(summary)
        steps = len(next(iter(runs.values())))
        t = took.get(item["name"])
        parts.append(f"\n## {w.upper()} SEQ: `{item['name']}`\n")
        parts.append(f"Parameters: `{prm}`. {steps} steps per mode"
                     + (f"; the notebook took {t} s ({t / 60:.1f} min) for "
                        f"{len(prm['MODES'])} modes." if t else ".")
                     + f" Figure: `docs/figures/fig3_{w}_seq.png`; CSVs: "
                     + ", ".join(f"`live_{w}_seq_{m}.csv`" for m in prm["MODES"]) + ".\n")
        for mode, df in runs.items():
            parts.append(f"- {mode}: lost {int(df['lost'].fillna(0).sum())}, duplicated "
                         f"{int(df['duplicated'].fillna(0).sum())}, mean cores "
                         f"{df['cores'].mean():.3f}, peak-step running tasks "
                         f"{int(df['running_tasks'].max())}, p50 latency (median over steps) "
                         f"{df['p50_latency_ms'].median():.0f} ms")
    parts.append("\n## Summary (Reuse against Default on the same engine)\n")
    parts.append(markdown_table(pd.concat(summaries, ignore_index=True)))
    (out / "summary.md").write_text("\n".join(parts) + "\n", encoding="utf-8")
    print(f"wrote {out} and fig3_*_seq.png in {figs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
