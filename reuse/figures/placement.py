"""The placement evaluation drawn and saved: Figures 5-10 as PNG box plots (resolution time and
AL per strategy and application size), with the runs and the report beside them."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reuse.placement.evaluation import APP_CLASSES, TOPO_CLASSES, format_report

__all__ = ["plot_figures", "save_evaluation"]

#: paper figure numbers: topology class -> (resolution time, AL)
FIGURES = {"regular": (5, 6), "large": (7, 8), "extra-large": (9, 10)}


def plot_figures(df: pd.DataFrame, outdir: str | Path) -> list[Path]:
    """Write ``fig<N>_<topology class>_<metric>.png``; returns the paths written."""
    import matplotlib.pyplot as plt

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for tc in TOPO_CLASSES:
        d = df[df.topo_class == tc]
        if d.empty:
            continue
        for fig_no, metric, label, rows in (
                (FIGURES[tc][0], "resolution_time", "resolution time (s)", d),
                (FIGURES[tc][1], "latency", "aggregate end-to-end latency (s)",
                 d[d.status == "ok"])):
            apps = [a for a in APP_CLASSES if a in set(rows.app_class)]
            if not apps:
                continue
            fig, axes = plt.subplots(1, len(apps), figsize=(4 * len(apps), 3.2), squeeze=False)
            for ax, a in zip(axes[0], apps, strict=True):
                r = rows[rows.app_class == a]
                names = [s for s in dict.fromkeys(df.strategy) if s in set(r.strategy)]
                ax.boxplot([r[r.strategy == s][metric].to_numpy() for s in names])
                ax.set_xticks(range(1, len(names) + 1), names, rotation=30, fontsize=7)
                ax.set_title(f"{a} applications", fontsize=9)
                ax.set_ylabel(label, fontsize=8)
            fig.suptitle(f"Fig. {fig_no} ({tc} topologies)", fontsize=10)
            fig.tight_layout()
            path = out / f"fig{fig_no}_{tc}_{metric}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written


def save_evaluation(df: pd.DataFrame, out_dir: str | Path) -> str:
    """Write ``runs.csv``, ``report.txt`` and the Figure 5-10 PNGs; return the report text."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = format_report(df)
    df.to_csv(out / "runs.csv", index=False)
    (out / "report.txt").write_text(report + "\n")
    plot_figures(df, out)
    return report
