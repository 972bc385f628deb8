"""HTML for the widget's side panels: the step's plan delta and a task's details (plain strings).

Kept apart from :mod:`reuse.viz.widget` so the text a user reads is tested without a kernel.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from html import escape

from reuse.analysis.billing import UNIT_COSTS, Charge, TaskCosts
from reuse.core.errors import CostError
from reuse.viz.model import Snapshot, TaskView

__all__ = ["delta_html", "details_html", "cost_share_html"]


def _ids(items: Iterable[str]) -> str:
    items = list(items)
    return ", ".join(f"<code>{escape(i)}</code>" for i in items) if items else "&ndash;"


def _streams(items: Iterable[tuple[str, str]]) -> str:
    return _ids(f"{a} \u2192 {b}" for a, b in items)


def delta_html(snap: Snapshot, total_steps: int | None = None) -> str:
    """The step's :class:`~reuse.core.plan.PlanDelta` as a table, and the submitted DAGs (``Phi``)."""
    step = f"Step {snap.step}" + (f" of {total_steps}" if total_steps is not None else "")
    out = [f'<div class="reuse-delta"><b>{escape(step)}: {escape(snap.title)}</b>']
    d = snap.delta
    if d is not None:
        out.append(f"<div><code>{escape(d.summary())}</code></div><table>")
        if d.op == "submit":
            rows = [("start (T<sub>x</sub>)", _ids(t.id for t in d.start)),
                    ("reused", _ids(d.reused)),
                    ("connect (S*<sub>x</sub>)", _streams(d.connect)),
                    ("boundary (S+<sub>x</sub>)", _streams(d.boundary)),
                    ("merged (Y)", _ids(d.merged)),
                    ("into", _ids([d.running_dag] if d.running_dag else [])),
                    ("sinks", _ids(f"{k} \u2192 {v}" for k, v in d.sinks.items()))]
        else:
            rows = [("stop (T<sub>t</sub>)", _ids(d.stop)),
                    ("disconnect (S<sub>t</sub>)", _streams(d.disconnect)),
                    ("from", _ids([d.running_dag] if d.running_dag else [])),
                    ("split into", _ids(d.split_into))]
        out.extend(f'<tr><td style="padding-right:8px">{k}</td><td>{v}</td></tr>'
                   for k, v in rows)
        out.append("</table>")
    if snap.record is not None:
        r = snap.record
        out.append(f"<div>running tasks: {r.reuse_tasks} with reuse, {r.default_tasks} "
                   f"without; running DAGs: {r.running_dags}</div>")
    sub = _ids(f"{k} \u2192 {v}" for k, v in snap.submitted.items())
    out.append(f"<div>submitted (\u03a6): {sub}</div></div>")
    return "".join(out)


def cost_share_html(snap: Snapshot, task: TaskView, costs: TaskCosts = UNIT_COSTS) -> str:
    """What a task costs per step and each user's share of it (the Shapley share of
    :mod:`reuse.analysis.billing`: its cost split equally among the dataflows it serves at this step).

    A task stopped at this step is not billed for it: a step is billed on the state after it.
    """
    if snap.step and task.id in snap.stopped:
        return "none: stopped at this step (a step bills the tasks running after it)"
    try:
        weight = costs.weight(task.type)
    except CostError as exc:
        return f"unknown: {escape(exc.message)}"
    split = Charge(task.id, weight, frozenset(task.users)).split()
    share = next(iter(split.values()))
    each = "paid by" if len(split) == 1 else "to each of"
    return (f'<span class="cost-share">{share:.4g}</span> per step {each} {_ids(sorted(split))} '
            f"({weight:g} {escape(costs.unit)} \u00f7 {len(split)})")


def details_html(snap: Snapshot, task_id: str | None, costs: TaskCosts = UNIT_COSTS) -> str:
    """A task's type, config (pretty JSON), the dataflows it serves, reuse count, running DAG,
    and each dataflow's share of its cost (``costs``: unit weights unless given).

    An empty ``task_id`` gives a hint; a task that is not in this step's snapshot says so (the
    selection survives stepping, so a user can follow a task until it stops).
    """
    if not task_id:
        return '<div class="reuse-details"><i>Click a task to see its details.</i></div>'
    if task_id not in snap.tasks:
        return (f'<div class="reuse-details"><b>{escape(task_id)}</b>: not running at step '
                f"{snap.step}.</div>")
    t = snap.tasks[task_id]
    config = json.dumps(t.config, indent=2, sort_keys=True, ensure_ascii=False)
    served = "served" if t.state in ("stopped", "paused") else "serves"
    local = [f"{d}/{tid}" for d, m in snap.mapping.items() for tid, rid in m.items()
             if rid == task_id]
    rows = [("type", f'<span class="task-type">{escape(t.type)}</span>'),
            ("state", escape(t.state) + (" (reused this step)" if t.reused_now else "")),
            ("running DAG", f"<code>{escape(t.running_dag)}</code>"),
            ("reuse count", f'<span class="reuse-count">{t.reuse_count}</span>'),
            (f"{served} dataflows", f'<span class="task-users">{_ids(t.users)}</span>'),
            ("cost share", cost_share_html(snap, t, costs)),
            *([("residual of", f"<code>{escape(t.residual_of[0])}</code> "
                f"({escape(t.residual_of[1])} rule)")] if t.residual_of else []),
            *([("read by residuals of", _ids(t.residual_users))] if t.residual_users else []),
            ("as submitted tasks", _ids(local)),
            ("parents", _ids(t.parents))]
    table = "".join(f'<tr><td style="padding-right:8px;vertical-align:top">{k}</td>'
                    f"<td>{v}</td></tr>" for k, v in rows)
    return (f'<div class="reuse-details" data-details="{escape(t.id)}"><b>Task '
            f"<code>{escape(t.id)}</code></b><table>{table}</table>"
            f'<div>config:</div><pre class="task-config" style="margin:0">{escape(config)}'
            "</pre></div>")
