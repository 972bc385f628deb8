"""HTML for the live view's panels (plain strings, tested without a kernel).

The live view (:mod:`reuse.live.view`) shows these beside the visualizer's scene: the live
tasks (shard, users, events/s, cores, CPU share, bill per user), the dataflows (join point,
output latency), a small cores-over-time plot, and the broker's malformed-message counts and
the engine's errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

__all__ = ["tasks_html", "dataflows_html", "cores_svg", "live_task_html", "status_html"]


def _table(cls: str, head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    th = "".join(f"<th style='text-align:left;padding-right:8px'>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td style='padding-right:8px'>{c}</td>" for c in r)
                   + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def tasks_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The live tasks, busiest first.

    >>> html = tasks_html([{"id": "a", "type": "P", "shard": 1, "users": ("D1", "D2"),
    ...                     "reuse": 2, "events_per_s": 10.0, "cores": 0.5,
    ...                     "cpu_share": 0.25, "bill_per_user": 0.25}])
    >>> 'data-task="a"' in html and "<td>2</td>" in html.replace("<td style='padding-right:8px'>", "<td>")
    True
    """
    ordered = sorted(rows, key=lambda r: (-float(r["cores"]), str(r["id"])))
    body = [(f'<code data-task="{escape(str(r["id"]))}">{escape(str(r["id"]))}</code>',
             escape(str(r["type"])), r["shard"], escape(", ".join(r["users"])), r["reuse"],
             f'{float(r["events_per_s"]):.1f}', f'{float(r["cores"]):.3f}',
             f'{100 * float(r["cpu_share"]):.1f}%', f'{float(r["bill_per_user"]):.3f}')
            for r in ordered]
    return _table("reuse-live-tasks", ["task", "type", "shard", "users", "reuse", "events/s",
                                       "cores", "CPU share", "bill/user (cores)"], body)


def dataflows_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The submitted dataflows: join point, tasks (started/reused), outputs and latency.

    >>> "p50" in dataflows_html([{"dag": "D1", "J": 5, "tasks": 3, "started": 3, "reused": 0,
    ...                            "n": 4, "p50_ms": 12.0, "p99_ms": 20.0}])
    True
    """
    def ms(v: Any) -> str:
        return "&ndash;" if v is None or v != v else f"{float(v):.0f}"

    def s(v: Any) -> str:
        return "&ndash;" if v is None or v != v else f"{float(v):.1f}"

    body = [(f'<code data-dag="{escape(str(r["dag"]))}">{escape(str(r["dag"]))}</code>', r["J"],
             r["tasks"], r["started"], r["reused"], s(r.get("first_output_s")),
             f'<span class="outputs">{int(r["n"])}</span>',
             f'<span class="last-seq">{ms(r.get("last_seq"))}</span>', ms(r["p50_ms"]),
             ms(r["p99_ms"]))
            for r in rows]
    return _table("reuse-live-dataflows", ["dataflow", "J", "tasks", "started", "reused",
                                           "first output (s)", "recent outputs",
                                           "last output seq", "p50 ms", "p99 ms"], body)


def cores_svg(series: Sequence[tuple[float, float]], width: int = 320, height: int = 80) -> str:
    """Cores over the last minutes as a small SVG line (the newest point at the right).

    >>> "polyline" in cores_svg([(0.0, 0.5), (1.0, 1.0)])
    True
    >>> "no samples" in cores_svg([])
    True
    """
    if len(series) < 2:
        return '<div class="reuse-live-cores"><i>cores: no samples yet</i></div>'
    t0, t1 = series[0][0], series[-1][0]
    top = max(1.0, max(c for _, c in series))
    span = max(t1 - t0, 1e-9)
    pts = " ".join(f"{(t - t0) / span * width:.1f},{height - c / top * height:.1f}"
                   for t, c in series)
    last = series[-1][1]
    return (f'<div class="reuse-live-cores">cores (now {last:.2f}, top of scale {top:.1f})'
            f'<svg width="{width}" height="{height}" style="display:block;border:1px solid #ddd">'
            f'<polyline fill="none" stroke="#1565c0" stroke-width="1.5" points="{pts}"/></svg>'
            "</div>")


def live_task_html(row: Mapping[str, Any] | None) -> str:
    """The selected task's live numbers, below its details."""
    if row is None:
        return "<div class='reuse-live-task'><i>not running in the engine now</i></div>"
    users = ", ".join(row["users"]) or "&ndash;"
    return (f"<div class='reuse-live-task'><b>live</b>: shard <span class='task-shard'>"
            f"{row['shard']}</span>, {float(row['events_per_s']):.1f} events/s, "
            f"{float(row['cores']):.3f} cores ({100 * float(row['cpu_share']):.1f}% of task "
            f"CPU); each of {escape(users)} pays <span class='task-bill'>"
            f"{float(row['bill_per_user']):.3f}</span> cores</div>")


def status_html(counts: Mapping[str, Any], malformed: Mapping[str, int],
                errors: Sequence[str], source: str) -> str:
    """One line: what runs, where the events come from, malformed messages, the last error.

    >>> status_html({"running_tasks": 3, "queries": 1}, {"sensors/SYS": 2}, [], "mqtt://h:1")
    '<div class="reuse-live-status">3 running tasks, 1 query; source mqtt://h:1; malformed: sensors/SYS 2</div>'
    """
    parts = [f"{counts.get('running_tasks', 0)} running tasks, {counts.get('queries', 0)} "
             f"quer{'y' if counts.get('queries', 0) == 1 else 'ies'}", f"source {escape(source)}"]
    bad = {t: n for t, n in malformed.items() if n}
    if bad:
        parts.append("malformed: " + ", ".join(f"{escape(t)} {n}" for t, n in sorted(bad.items())))
    if errors:
        parts.append(f'<span style="color:#b71c1c">error: {escape(errors[-1])}</span>')
    return f'<div class="reuse-live-status">{"; ".join(parts)}</div>'
