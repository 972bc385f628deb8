"""Issue 35's cores-latency plot, drawn from its raw file (``docs/bench/cores_latency.json``).

``runtime_rates.py`` measures the cells (the RIoT SEQ peak on the shared query, Default and
Reuse, one mode per trigger: ``/trigger1`` ... ``/trigger10``, at 10 and 100 events/s); this
draws them, one panel per rate: cores against median latency, a line per mode through its
triggers, each point labelled with its trigger and a bar to its p99. The numbers are in the
table ``report.py`` generates beside it in BENCHMARKS.md.

    .venv/bin/python benchmarks/plot_cores_latency.py [--raw docs/bench/cores_latency.json]
        [--out docs/bench/cores_latency.png]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.report import body  # noqa: E402


def points(raw: dict[str, Any], rate: float, mode: str) -> list[tuple[float, float, float, float]]:
    """``(trigger, median cores, median p50 s, median p99 s)`` per trigger of ``mode`` (its
    base name, e.g. ``reuse-inplace``) at ``rate``, by trigger."""
    by: dict[float, list[dict[str, Any]]] = {}
    for c in raw["cells"]:
        if c["rate"] == rate and c["mode"].split("/")[0] == mode and not c.get("failed") \
                and c.get("p50_ms") is not None:
            by.setdefault(float(c["trigger_s"]), []).append(c)
    return [(t, statistics.median(float(c["cores"]) for c in cs),
             statistics.median(c["p50_ms"] / 1000 for c in cs),
             statistics.median(c["p99_ms"] / 1000 for c in cs)) for t, cs in sorted(by.items())]


def draw(raw: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = sorted({float(c["rate"]) for c in raw["cells"]})
    modes = sorted({c["mode"].split("/")[0] for c in raw["cells"]})
    fig, axes = plt.subplots(1, len(rates), figsize=(5.2 * len(rates), 4.0), squeeze=False)
    for ax, rate in zip(axes[0], rates, strict=True):
        for mode in modes:
            pts = points(raw, rate, mode)
            if not pts:
                continue
            xs, ys = [p[2] for p in pts], [p[1] for p in pts]
            line, = ax.plot(xs, ys, marker="o", label=mode)
            for t, cores, p50, p99 in pts:
                ax.plot([p50, p99], [cores, cores], color=line.get_color(), alpha=0.35)
                ax.annotate(f"{t:g} s", (p50, cores), textcoords="offset points",
                            xytext=(4, 4), fontsize=8)
        ax.set_title(f"{rate:g} events/s per source")
        ax.set_xlabel("latency (s): median, bar to p99")
        ax.set_ylabel("cores")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("RIoT SEQ peak, shared query: cores against latency by trigger", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--raw", type=Path, default=ROOT / "docs" / "bench" / "cores_latency.json")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "bench" / "cores_latency.png")
    args = ap.parse_args(argv)
    draw(body(json.loads(args.raw.read_text(encoding="utf-8"))), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
