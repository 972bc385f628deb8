"""Write the committed planner-level figures and their summary: ``docs/figures/``.

``python experiments/committed_figures.py [--out docs/figures] [--seeds 200]``

Everything here is the planner (no Spark): Figures 2 and 4 for the six workload/trace pairs
(SEQ, RW1, RW2 with the registry's default seeds), Figure 4 both ways, and the random walks over
``--seeds`` seeds (bands, distributions, where the paper's walk and ours sit, the median-walk
seed), and the bills of fair cost sharing (``reuse.analysis.billing``, unit costs, Shapley and
lifetime rules). ``summary.md`` names the command and parameters of each figure. The README and
``docs/results.md`` show these files; re-run this script after a change that moves them.
Figure 3 (live) is not made here: it needs Spark runs (``notebooks/live.ipynb``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from reuse.analysis.figure4 import replay_users  # noqa: E402
from reuse.analysis.walks import median_walk_seed, walk_stats  # noqa: E402
from reuse.figures.batch import ROOT, markdown_table  # noqa: E402
from reuse.figures.billing import billing_figures  # noqa: E402
from reuse.figures.seeds import figure4_figures, plot_figure4_both, seeds_figures  # noqa: E402
from reuse.figures.traces import PlannerRun, plot_reuse_histogram, plot_running_tasks, summary_row  # noqa: E402
from reuse.workloads.registry import load_workload  # noqa: E402
from reuse.workloads.trace_registry import TRACE_SEEDS, build_trace  # noqa: E402

TRACES = ("seq", "rw1", "rw2")
DPI = 80


def _save(fig: plt.Figure, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path.name


def planner_panels(workload: str, flows: list, out: Path) -> tuple[list[str], pd.DataFrame,
                                                                   pd.DataFrame]:
    """Figure 2, Figure 4 and Figure 4 both ways: one PNG each with the three traces' panels."""
    runs, series = [], []
    for trace in TRACES:
        t = build_trace(workload, trace, flows)
        records, s = replay_users(t.flows, t.ops, check=True)
        runs.append(PlannerRun(workload, trace, records))
        series.append(s)
    names = []
    for fig_no, plot in (("2", plot_running_tasks), ("4", plot_reuse_histogram)):
        fig, axes = plt.subplots(1, 3, figsize=(16, 3.8))
        for run, ax in zip(runs, axes, strict=True):
            plot(run, ax)
        names.append(_save(fig, out / f"fig{fig_no}_{workload}.png"))
    fig, axes = plt.subplots(1, 3, figsize=(18, 3.8))
    for trace, s, ax in zip(TRACES, series, axes, strict=True):
        plot_figure4_both(s, ax, workload, trace)
    names.append(_save(fig, out / f"fig4both_{workload}.png"))
    fig4 = figure4_figures(workload, flows, out / ".scratch", TRACES)  # the table only
    return names, pd.DataFrame([summary_row(r) for r in runs]), fig4


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "figures"))
    p.add_argument("--seeds", type=int, default=200, help="random walks per workload (>= 50)")
    args = p.parse_args(argv)
    if args.seeds < 50:
        print("committed_figures: error: --seeds must be at least 50", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = out / ".scratch"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                            capture_output=True).stdout.strip() or "unknown"
    command = f"python experiments/committed_figures.py --seeds {args.seeds}"
    files: dict[str, list[str]] = {}
    planner, fig4, seeds, position, median, billing = [], [], [], [], [], []
    for w in ("opmw", "riot"):
        flows = load_workload(w)
        names, summary, table = planner_panels(w, flows, out)
        planner.append(summary)
        fig4.append(table)
        stats = walk_stats(w, flows, range(1, args.seeds + 1))
        tables = seeds_figures(stats, flows, scratch, dpi=DPI)
        for name in (f"seeds_fig2_{w}.png", f"seeds_fig2_dist_{w}.png", f"seeds_fig4_dist_{w}.png"):
            (scratch / name).replace(out / name)
            names.append(name)
        _, bills = billing_figures(w, flows, scratch)
        billing.append(bills)
        for name in [f"bills_{w}_{t}.png" for t in TRACES] + [f"arrivals_{w}.png"]:
            (scratch / name).replace(out / name)
            names.append(name)
        files[w] = names
        seeds.append(tables["summary"])
        position.append(tables["position"])
        live = walk_stats(w, flows, range(1, args.seeds + 1), subset=6, walk=4)
        median.append({"workload": w, "paper's protocol": median_walk_seed(stats),
                       "live default set (6 DAGs, walk 4)": median_walk_seed(live),
                       "by mean present DAGs": median_walk_seed(stats, "mean_present")})
    for f in scratch.iterdir():
        f.unlink()
    scratch.rmdir()

    def table(df: pd.DataFrame) -> str:
        return markdown_table(df.round(3).fillna(""))

    seed_cols = ["workload", "seeds", "dags", "populate", "walk"] + [
        f"{m}_{q}" for m in ("mean_present", "mean_default", "saving", "int_2plus", "avg_gt1")
        for q in ("p10", "median", "p90")]
    parts = [
        "# Committed planner-level figures\n",
        f"Made by `{command}` (from the repo root, commit {commit}); every file in this folder "
        "comes from that one command. Planner level: the manager replays each trace, no Spark. "
        f"Traces from `reuse.workloads.trace_registry.build_trace`: SEQ seed {TRACE_SEEDS['seq']}, RW1 seed "
        f"{TRACE_SEEDS['rw1']}, RW2 seed {TRACE_SEEDS['rw2']}; random walks populate 20 of 35 "
        "(OPMW) or 15 of 21 (RIoT) DAGs, then 100 random steps, then drain. OPMW is the seeded 35 "
        "of the WINGS corpus.\n",
        "| file | what | parameters |", "|---|---|---|",
    ]
    for w in ("opmw", "riot"):
        W = w.upper()
        parts += [
            f"| `fig2_{w}.png` | Figure 2: running tasks per step, Default vs Reuse | {W}; SEQ, RW1, RW2 |",
            f"| `fig4_{w}.png` | Figure 4 (ours: per-step integer reuse counts), bins 2.. | {W}; SEQ, RW1, RW2 |",
            f"| `fig4both_{w}.png` | Figure 4 both ways: ours beside the paper's reading | {W}; SEQ, RW1, RW2 |",
            f"| `seeds_fig2_{w}.png` | Figure 2 over seeds: median and 10-90% band; our RW1/RW2 drawn over it | {W}; rw, seeds 1-{args.seeds} |",
            f"| `seeds_fig2_dist_{w}.png` | present DAGs, mean Default tasks, saving over seeds; paper's and our walks placed | {W}; rw, seeds 1-{args.seeds} |",
            f"| `seeds_fig4_dist_{w}.png` | the reused share over seeds, both readings | {W}; rw, seeds 1-{args.seeds} |",
            f"| `bills_{w}_<trace>.png` | fair cost sharing: standalone cost against bill per dataflow (unit costs, Shapley) | {W}; SEQ, RW1, RW2 |",
            f"| `arrivals_{w}.png` | each stay's saving against its arrival order, both rules | {W}; SEQ, RW1, RW2 |",
        ]
    parts += [
        "\n## Figure 2: running tasks (ours beside the paper's)\n",
        table(pd.concat(planner, ignore_index=True)),
        "\n## Figure 4 both ways\n",
        "`int_*`: ours, each step each running task's integer reuse count; `avg_*`: the paper's "
        "reading, each task's count averaged over its running time, half-open bins, weighted by "
        "running time. `int_2plus` and `avg_gt1` compare with `paper_reused`; `int_2`/`int_3plus` "
        "and `avg_1to2`/`avg_gt2` split them as the paper's 11% + 4% (Fig. 4a) does.\n",
        table(pd.concat(fig4, ignore_index=True)),
        f"\n## Random walks over {args.seeds} seeds\n",
        "Measured over the 100 walk steps of each seed: median and 10-90% range over seeds.\n",
        table(pd.concat(seeds, ignore_index=True)[seed_cols]),
        "\nWhere the paper's walks and ours sit (`_pct`: percentile among the seeds):\n",
        table(pd.concat(position, ignore_index=True)),
        "\nThe median-walk seed (`reuse.analysis.walks.median_walk_seed`, by mean Default running tasks):\n",
        table(pd.DataFrame(median)),
        "\n## Fair cost sharing (unit costs)\n",
        "Per workload, trace and rule (`reuse.figures.billing.summary_rows`): cost with reuse and "
        "alone, the spread of the saving per dataflow, and how the saving splits between the "
        "early and late halves of the arrivals.\n",
        table(pd.concat(billing, ignore_index=True)),
    ]
    (out / "summary.md").write_text("\n".join(parts), encoding="utf-8")
    print(f"{sum(len(v) for v in files.values())} figures and summary.md -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
