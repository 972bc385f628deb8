"""The shard worker on the real RIoT SEQ peak, without Spark: exact, batch-independent, unchanged.

All 21 RIoTBench dataflows submitted through the Reuse planner and deployed on two shards, as
the inplace engine deploys them, run by :func:`run_shard` over batches of uneven size with the
task states carried through JSON, as the driver carries them. Checked:

- every sink's and recorded leaf's records equal the reference execution's;
- one batch over the whole range gives the same record lines, in the same order, and the same
  final states as the many batches;
- the record lines and final states are those the shard worker gave before its per-``seq``
  cost was cut (issue 22): a fingerprint of them, with the clock fixed, is pinned below. A
  change to a task's semantics changes it on purpose; regenerate it then with
  ``_fingerprint(*_run(BOUNDS))``. It is the same on every machine: the one model fitted by
  linear algebra (:class:`reuse.tasks.models.LinearModel`) no longer depends on the BLAS
  kernel the CPU selects (the fingerprint pinned before differed between OpenBLAS's
  SkylakeX and Haswell kernels, so the test failed on an AVX-512 Xeon).

Each check runs on both paths of the interpreter (issue 35): per event, and columnar (the
live default: every task a batch at a time through its kernel). Both give the one pinned
fingerprint; whole-event records (``record="full"``) are the same bytes on both.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

import pytest

from reuse.core.paths import riotbench_dir
from reuse.runtime.accounting import reference_records
from reuse.runtime.engines.shared.deploy import Deployment
from reuse.runtime.engines.shared.shard import run_shard
from reuse.testing import deployed_at_zero, missing, riot_flows

DATA = riotbench_dir(None)
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=missing("data", "no data/riotbench"))
OPTS = {"data_dir": str(DATA), "pi_iterations": 10, "record": "digest", "limit": None}
BOUNDS = [0, 1, 37, 40, 101, 160]
#: sha256 of the record lines and final states of ``_run(BOUNDS)`` (see the module doc)
FINGERPRINT = "d2c0bf6b1c3405e6c0dedc2c96b5795263db3e7455d32c9621ffb2c02d4652e8"


#: the two paths of the interpreter
PATHS = pytest.mark.parametrize("columnar", [False, True], ids=["per-event", "columnar"])


def _peak() -> tuple[Deployment, dict[str, Any]]:
    """The SEQ peak on two shards, and the ledger the reference execution reads."""
    return deployed_at_zero(riot_flows().values(), 2, OPTS)


def _run(bounds: list[int], opts: dict[str, Any] | None = None,
         ) -> tuple[dict[str, list[str]], dict[str, Any], dict[str, Any]]:
    """Record lines per task (batches concatenated), final states, and the ledger; ``opts``
    (default :data:`OPTS`: per event) as ``run_shard`` takes them."""
    opts = OPTS if opts is None else opts
    dep, ledger = _peak()
    states: dict[str, Any] = {}
    lines: dict[str, list[str]] = {}
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        epoch = dep.claim(lo, hi)
        new: dict[str, Any] = {}
        for tasks in epoch.shards:
            mine = {t["id"]: states[t["id"]] for t in tasks if t["id"] in states}
            res = run_shard(tasks, lo, hi, mine, opts, t0=0, rate=10.0, now_ms=lambda: 0.0)
            new.update(res["states"])
            for tid, recs in res["sinks"].items():
                lines.setdefault(tid, []).extend(recs)
        states = json.loads(json.dumps(new))
    return lines, states, ledger


def _fingerprint(lines: dict[str, list[str]], states: dict[str, Any], _: Any = None) -> str:
    text = json.dumps({"lines": lines, "states": states}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


@needs_data
@PATHS
def test_seq_peak_shards_are_exact_batch_independent_and_unchanged(columnar: bool) -> None:
    opts = {**OPTS, "columnar": columnar}
    lines, states, ledger = _run(BOUNDS, opts)
    ref = reference_records(ledger, BOUNDS[-1])
    assert len(ref) > 20 and all(sum(c.values()) > 0 for c in ref.values())
    assert set(lines) == set(ref)
    for tid, expected in ref.items():
        got = Counter((r["q"], r["d"]) for r in map(json.loads, lines[tid]))
        assert got == expected, tid
    assert states
    one_lines, one_states, _ = _run([BOUNDS[0], BOUNDS[-1]], opts)
    assert one_lines == lines
    assert one_states == states
    assert _fingerprint(lines, states) == FINGERPRINT


@needs_data
def test_seq_peak_whole_event_records_are_the_same_bytes_on_both_paths() -> None:
    """``record="full"`` (the live view's): every line, event included, the same bytes."""
    bounds = [0, 7, 30]
    per = _run(bounds, {**OPTS, "record": "full", "columnar": False})[0]
    col = _run(bounds, {**OPTS, "record": "full", "columnar": True})[0]
    assert col == per and sum(map(len, per.values())) > 100
