"""The composition matrix (issue 32): which combinations of the runtime's capabilities run.

The axes::

    source  replay (generated) | mqtt (a Mosquitto broker, `reuse publish`'s events)
    layout  whole (each running DAG in one shard) | split (--split)
    safety  none | k-safe (--k-safe 1, replicas in shards) | apps (--k-safe 1 --replicas apps)
    match   exact | semantic
    life    one run | death (the driver killed, then --resume; across applications, an
            instance's driver killed and replaced; the engine front: the process driving the
            Engine killed after two operations, then ``Engine.resume`` runs the rest)
    front   run (`reuse run`) | engine (`reuse.live.Engine.run_trace`)

Not the full product (96 runs of a minute): an *all-pairs* set, every pair of values of two
axes in at least one row, chosen greedily among the combinations that run; a pair that no
runnable combination holds gets a row of its own, refused, with the reason (the spec's one
line, `reuse.runtime.refusals.REFUSED`, or the front's). Each row runs one short RIoT trace with a
merge and an unmerge (stats-sys; clean-kalman-sys reusing its source and parser; a narrower
clean-sys, a residual of clean-kalman-sys's range filter under semantic matching; then
clean-kalman-sys removed), on `local[2]`, and prints: rc, lost, duplicated, whether every
output equals the reference execution's (lost = duplicated = 0 in every step), the longest
output pause (around the kill, on a death row) and the wall time.

    python benchmarks/compose.py [--out docs/bench/compose.json] [--rows N]

One Spark job at a time (each row its own JVM, one after another); run nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import copy
import csv
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.children import PREFIX, run_child  # noqa: E402
from benchmarks.provenance import raw_file  # noqa: E402

AXES: dict[str, tuple[str, ...]] = {
    "source": ("replay", "mqtt"),
    "layout": ("whole", "split"),
    "safety": ("none", "k-safe", "apps"),
    "match": ("exact", "semantic"),
    "life": ("one run", "death"),
    "front": ("run", "engine"),
}
OPS = [("submit", "stats-sys"), ("submit", "clean-kalman-sys"), ("submit", "narrow-clean-sys"),
       ("remove", "clean-kalman-sys")]
STEP_S, RATE, TRIGGER_S = 5.0, 20.0, 1.0


def flows_json() -> list[dict[str, Any]]:
    """The trace's dataflows: two RIoT ones and a narrower clean-sys (each range inside)."""
    from reuse.testing import riot_flows

    base = riot_flows("stats-sys", "clean-sys", "clean-kalman-sys")
    narrow = copy.deepcopy(base["clean-sys"].to_dict())
    narrow["id"] = "narrow-clean-sys"
    for t in narrow["tasks"]:
        if t["type"] == "RangeFilter":
            t["config"]["valid_range"].update(temperature=[0.0, 30.0], humidity=[20.0, 80.0])
    return [base["stats-sys"].to_dict(), base["clean-kalman-sys"].to_dict(), narrow]


def refusal(row: dict[str, str]) -> tuple[str, str] | None:
    """Why a combination does not run: ``(kind, line)``; ``None`` if it runs."""
    from reuse.core.errors import ReuseError
    from reuse.runtime.refusals import REFUSED
    from reuse.runtime.spec import RunSpec

    try:
        RunSpec.of(**spec_kwargs(row))
    except ReuseError as exc:
        line = str(exc)
        kind = next((r.kind for r in REFUSED if line.startswith(r.message.split("{")[0])), "?")
        return kind, line
    return None


def spec_kwargs(row: dict[str, str], broker: str = "mqtt://127.0.0.1:1883") -> dict[str, Any]:
    return {"mode": "reuse", "match": row["match"], "split": row["layout"] == "split",
            "source": broker if row["source"] == "mqtt" else "replay",
            "k_safe": 0 if row["safety"] == "none" else 1,
            "replicas": "apps" if row["safety"] == "apps" else "shards"}


def all_pairs() -> list[dict[str, str]]:
    """Rows that hold every pair of axis values: greedily, the runnable combination covering
    most pairs not yet held; then one refused row per pair no runnable combination holds."""
    names = list(AXES)
    combos = [dict(zip(names, vals, strict=True)) for vals in itertools.product(*AXES.values())]

    def pairs(c: dict[str, str]) -> set[tuple[str, str, str, str]]:
        return {(a, c[a], b, c[b]) for a, b in itertools.combinations(names, 2)}

    runnable = [c for c in combos if refusal(c) is None]
    want = set().union(*(pairs(c) for c in runnable))
    rows: list[dict[str, str]] = []
    while want:
        best = max(runnable, key=lambda c: len(pairs(c) & want))
        rows.append(best)
        want -= pairs(best)
    held = set().union(*(pairs(c) for c in rows))
    for p in sorted(set().union(*(pairs(c) for c in combos)) - held):
        if any(p in pairs(r) for r in rows):
            continue
        rows.append(next(c for c in combos if p in pairs(c)))
    return rows


# --- running one row ---------------------------------------------------------------------------

def _inputs(d: Path) -> tuple[Path, Path]:
    dags = d / "dags"
    dags.mkdir(parents=True, exist_ok=True)
    for f in flows_json():
        (dags / f"{f['id']}.json").write_text(json.dumps(f))
    trace = d / "trace.json"
    trace.write_text(json.dumps({"ops": [{"op": o, "dag": g} for o, g in OPS]}))
    return dags, trace


def _cli_flags(row: dict[str, str], broker: str) -> list[str]:
    kw = spec_kwargs(row, broker)
    flags = ["--match", kw["match"]]
    if kw["split"]:
        flags.append("--split")
    if row["source"] == "mqtt":
        flags += ["--source", broker]
    if kw["k_safe"]:
        flags += ["--k-safe", "1"]
    if row["safety"] == "apps":
        flags += ["--replicas", "apps"]
    return flags


def _kill_when(root: Path, proc: subprocess.Popen[Any], target: str) -> float:
    """Kill the driver (``target="driver"``: the run's whole process group) once step 2 was
    enacted and outputs flow, or instance ``i1``'s driver once it ran a working batch;
    returns the wall time of the kill."""
    from reuse.runtime.common.files import read_batches
    from reuse.testing import journal_kinds

    deadline = time.time() + 240
    while True:
        if proc.poll() is not None:
            raise RuntimeError("the run ended before the kill")
        if time.time() > deadline:
            raise RuntimeError("the moment to kill never came")
        if target == "driver":
            if (journal_kinds(root).count("op") >= 2
                    and any(b["events"] > 0 for b in read_batches(root))):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
                return time.time()
        else:
            apps = root / "apps.json"
            inst = root / "apps" / "i1"
            if apps.is_file() and (inst / "batches.jsonl").is_file() and any(
                    b["events"] > 0 for b in read_batches(inst)):
                pid = next(i["driver_pid"] for i in json.loads(apps.read_text())["instances"]
                           if i["id"] == "i1")
                os.killpg(pid, signal.SIGKILL)
                return time.time()
        time.sleep(0.1)


def run_cli(row: dict[str, str], d: Path, broker: str) -> dict[str, Any]:
    """One row through ``reuse run`` (and ``--resume`` after a driver's death)."""
    dags, trace = _inputs(d)
    root, out = d / "run", d / "rows.csv"
    reuse = [sys.executable, "-m", "reuse", "run"]
    argv = [*reuse, "--dags", str(dags), "--trace", str(trace), "--step-seconds", str(STEP_S),
            "--trigger-seconds", str(TRIGGER_S), "--warmup-seconds", "1", "--rate", str(RATE),
            "--root", str(root), "--out", str(out), *_cli_flags(row, broker)]
    log = open(d / "run.log", "w")  # noqa: SIM115 - the child's, closed below
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    died = None
    try:
        if row["life"] == "death":
            died = _kill_when(root, proc, "i1" if row["safety"] == "apps" else "driver")
        rc = proc.wait(timeout=600)
        if row["life"] == "death" and row["safety"] != "apps":
            time.sleep(3)  # the trace goes on in wall time while nobody runs it
            rc = subprocess.run([*reuse, "--resume", str(root), "--out", str(out)], stdout=log,
                                stderr=subprocess.STDOUT, timeout=600).returncode
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    rows = list(csv.DictReader(out.open())) if out.is_file() else []
    return {"rc": rc, "rows": rows, "died_ms": None if died is None else round(died * 1000),
            "log_tail": (d / "run.log").read_text()[-600:] if rc else ""}


def run_engine(row: dict[str, str], d: Path, broker: str) -> dict[str, Any]:
    """One row through ``reuse.live.Engine.run_trace``, in a child process (its own JVM); on
    a death row, a first child submits the first two operations live and is killed with its
    JVM once outputs flow, and a second one resumes the engine and runs the rest."""
    job = {"row": row, "dir": str(d), "broker": broker}
    if row["life"] != "death":
        rc, res = run_child([sys.executable, __file__, "--child", json.dumps(job)])
        return {"rc": rc, "rows": res or [], "died_ms": None, "log_tail": ""}
    proc = subprocess.Popen([sys.executable, __file__, "--child",
                             json.dumps({**job, "phase": "die"})], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "READY":
            raise RuntimeError("the engine's driver ended before outputs flowed")
        died = time.time()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(3)  # the sources go on in wall time while nobody runs the engine
    rc, res = run_child([sys.executable, __file__, "--child",
                         json.dumps({**job, "phase": "resume"})])
    return {"rc": rc, "rows": res or [], "died_ms": round(died * 1000), "log_tail": "",
            "steps": len(OPS) - 2, "kill_gap_s": _pause_around(d / "run", died * 1000)}


def _pause_around(root: Path, died_ms: float) -> float | None:
    """Seconds from the last batch completed before the kill to the first one after it."""
    from reuse.runtime.common.files import read_batches

    ends = sorted(float(b["ms"]) + 1000 * float(b["wall_s"]) for b in read_batches(root))
    before = [e for e in ends if e <= died_ms]
    after = [e for e in ends if e > died_ms]
    return round((after[0] - before[-1]) / 1000, 3) if before and after else None


def child(arg: str) -> None:
    """The engine front's child: build the Engine from the row, replay the trace, print the
    rows as ``RESULT <json>``."""
    from reuse.core.dataflow import parse_dataflow
    from reuse.core.traces import Op
    from reuse.live import Engine

    job = json.loads(arg)
    row, d = job["row"], Path(job["dir"])
    kw = spec_kwargs(row, job["broker"])
    flows = {f["id"]: parse_dataflow(f) for f in flows_json()}
    ops = [Op(o, g) for o, g in OPS]
    if job.get("phase") == "resume":
        with Engine.resume(d / "run", workload=None) as eng:
            rows = eng.run_trace(ops[2:], flows, step_seconds=STEP_S)
        print(PREFIX + json.dumps(rows, default=str), flush=True)
        return
    eng = Engine("local[2]", kw["source"], root=d / "run", rate=RATE, trigger_s=TRIGGER_S,
                 match=kw["match"], k_safe=kw["k_safe"], split=kw["split"], catch_up=False,
                 workload=None, replicas=kw["replicas"])
    if job.get("phase") == "die":  # two operations live, outputs flowing, then wait to die
        for op in ops[:2]:
            eng.submit(flows[op.dag])
        eng.wait_outputs(ops[0].dag, 3)
        print("READY", flush=True)
        time.sleep(600)
    with eng:
        rows = eng.run_trace(ops, flows, step_seconds=STEP_S, warmup_s=1.0)
    print(PREFIX + json.dumps([{k: v for k, v in r.items()} for r in rows], default=str),
          flush=True)


def summary(row: dict[str, str], res: dict[str, Any], wall_s: float) -> dict[str, Any]:
    rows = res["rows"]
    lost = sum(int(r["lost"] or 0) for r in rows)
    dup = sum(int(r["duplicated"] or 0) for r in rows)
    gaps = [float(r["gap_s"]) for r in rows if r.get("gap_s") not in (None, "")]
    if res["died_ms"] is not None:  # the steps around the kill
        near = [float(r["gap_s"]) for r in rows if r.get("gap_s") not in (None, "")
                and float(r["t_end_ms"]) >= res["died_ms"]][:2]
        gaps = near or gaps
    if res.get("kill_gap_s") is not None:  # the engine front: the kill came between traces
        gaps = [res["kill_gap_s"]]
    ok = res["rc"] == 0 and len(rows) == res.get("steps", len(OPS)) and lost == dup == 0
    return {**row, "status": "ok" if ok else "FAILED", "rc": res["rc"], "steps": len(rows),
            "lost": lost, "duplicated": dup, "outputs_equal_reference": ok,
            "gap_s": max(gaps) if gaps else None, "wall_s": round(wall_s, 1),
            "log_tail": res["log_tail"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "bench" / "compose.json"))
    ap.add_argument("--rows", type=int, default=0, help="run only the first N rows (0: all)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    from reuse.runtime.dataplane import mosquitto
    from reuse.runtime.dataplane.publish import Publisher, Stream

    rows = all_pairs()
    if args.rows:
        rows = rows[:args.rows]
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="compose-") as tmp:
        for i, row in enumerate(rows, 1):
            why = refusal(row)
            label = ", ".join(f"{k}={v}" for k, v in row.items())
            if why is not None:
                results.append({**row, "status": "refused", "kind": why[0], "reason": why[1]})
                print(f"[{i}/{len(rows)}] {label}: refused ({why[0]}): {why[1]}", flush=True)
                continue
            d = Path(tmp) / f"row{i}"
            d.mkdir()
            broker, pub, thread, started = "", None, None, None
            if row["source"] == "mqtt":
                started = mosquitto.start(d / "mosquitto", port=_free_port())
                broker = started["url"]
                pub = Publisher(broker, [Stream("SYS", "SYS")], rate=RATE).connect()
                thread = threading.Thread(target=pub.run, daemon=True)
                thread.start()
            t0 = time.time()
            try:
                res = (run_engine if row["front"] == "engine" else run_cli)(row, d, broker)
            except Exception as exc:  # a row that fails is a row, not the end of the matrix
                res = {"rc": -1, "rows": [], "died_ms": None, "log_tail": repr(exc)}
            finally:
                if pub is not None and thread is not None:
                    pub.halt()
                    thread.join(timeout=10)
                    pub.close()
                if started is not None:
                    mosquitto.stop(d / "mosquitto")
            results.append(summary(row, res, time.time() - t0))
            r = results[-1]
            print(f"[{i}/{len(rows)}] {label}: {r['status']} rc {r['rc']}, lost {r['lost']}, "
                  f"duplicated {r['duplicated']}, gap {r['gap_s']} s, {r['wall_s']} s",
                  flush=True)
    raw_file(args.out, {"rows": results}, axes={k: list(v) for k, v in AXES.items()},
             ops=[list(o) for o in OPS], step_s=STEP_S, rate=RATE, trigger_s=TRIGGER_S)
    print(f"wrote {args.out}")
    return 0 if all(r["status"] != "FAILED" for r in results) else 1


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    sys.exit(main())
