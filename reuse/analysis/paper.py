"""The paper's reported numbers (section 5), to print and plot beside ours.

Only what the text states survives (the figures themselves are missing from the extraction), so
each entry says where it comes from. ``None`` means the paper does not report it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PAPER", "WORKLOAD_SHAPE"]

WORKLOAD_SHAPE: dict[str, dict[str, Any]] = {
    "opmw": {"dags": 35, "tasks": 471, "unique_tasks": 219, "tasks_per_dag": "2-38",
             "usable_templates": 74},
    "riot": {"dags": 21, "tasks": 138, "unique_types": 19, "tasks_per_dag": "4-8"},
}

# (workload, trace) -> reported figures. Tasks: Figure 2; cores: Figure 3; reuse: Figure 4.
PAPER: dict[tuple[str, str], dict[str, Any]] = {
    ("opmw", "seq"): {
        "peak_default_tasks": 471, "peak_reuse_tasks": 274,          # 5.3, step 35
        "peak_default_cores": 74, "peak_reuse_cores": 38,            # 5.3, "42% fewer"
        "reused_2plus": 0.15,                                        # 11% in (1,2], 4% > 2
        "reused_1to2": 0.11, "reused_gt2": 0.04,                     # Fig. 4a
        "note": "Reuse cores cross above Default at step 67 (8 vs 6) from paused tasks",
    },
    ("opmw", "rw1"): {
        "median_active_dags": 20,                                    # 5.3, "≈ 20 median"
        "default_tasks_range": (187, 364), "reuse_tasks_range": (103, 242),
        "mean_task_reduction": 0.38, "median_default_cores": 50, "median_reuse_cores": 30,
        "reused_2plus": 0.14,
    },
    ("opmw", "rw2"): {
        "median_active_dags": 20,
        "default_tasks_range": (185, 309), "reuse_tasks_range": (90, 216),
        "mean_task_reduction": 0.38, "median_default_cores": 41, "median_reuse_cores": 26,
        "reused_2plus": 0.14,
    },
    ("riot", "seq"): {
        "peak_default_tasks": 138, "peak_reuse_tasks": 75, "mean_core_reduction": 0.375,
        "reused_2plus": 0.24,
    },
    ("riot", "rw1"): {
        "mean_default_tasks": 125, "mean_reuse_tasks": 67, "mean_default_cores": 12,
        "mean_reuse_cores": 6, "core_reduction": (0.47, 0.51), "reused_2plus": 0.08,
    },
    ("riot", "rw2"): {
        "core_reduction": (0.47, 0.51), "reused_2plus": 0.08,
        "note": "'Similar values are seen for RW2 as well'",
    },
}
