"""The README's two commands on a fresh clone, timed, into a committed raw file (issues 33, 34).

The suite's time ("under 15 minutes of pytest", issue 34) and the main job's are numbers like
any other: they come from a file that names the command, the commit and the machine, not from
a hand-copied log. Two ways in:

    .venv/bin/python benchmarks/fresh_clone.py test [--loaded] [--shuffle SEED]
                                                   # clone HEAD, run .ci/run
    .venv/bin/python benchmarks/fresh_clone.py reproduce tiny    # clone HEAD, run the main job
    .venv/bin/python benchmarks/fresh_clone.py record LOG --commit C --started T --ended T \\
        [--loaded]                                              # a pass run by hand, its log kept

``test`` clones the repository's HEAD (committed work only) into a folder beside it, runs
``bash .ci/run`` there (under ``scripts/with-cpu-hog.sh`` with ``--loaded``: one busy loop per
core from start to end), and removes the clone. With ``--shuffle SEED`` it passes ``--shuffle SEED`` to pytest through
``.ci/run``: both lanes run their modules and tests in an order drawn from the seed (issue 34's
hunt for order dependence; ``reuse.testing.shuffled``). Every way keeps the whole log under
``docs/bench/fresh/`` and appends one record to ``docs/bench/fresh_clone.json``: the pass's
own command, commit, start and end (wall time, set-up included), exit code, and what pytest
printed (each lane's count and time, the slowest tests). Run it alone: it is the suite, with
its Spark tests, on two cores.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.provenance import machine  # noqa: E402

RAW = ROOT / "docs" / "bench" / "fresh_clone.json"
LOGS = ROOT / "docs" / "bench" / "fresh"
#: issue 34's bound on each lane's pytest time
LIMIT_S = 15 * 60

_SUMMARY = re.compile(r"^=*\s*(?P<counts>\d+ (?:passed|failed)[^=]*?) in (?P<s>[\d.]+)s"
                      r"(?: \([\d:]+\))?\s*=*$")
_SLOW = re.compile(r"^(?P<s>[\d.]+)s (?P<when>call|setup|teardown)\s+(?P<test>\S+)$")


#: the lanes a ``test.sh`` log reports, in its order, each after its heading (the first has
#: none: it prints first); only the passes of 2026-11-29 that tried it have a many-JVM lane
_LANES = (("spark_lane", None),
          ("jvm_lane", "======== the tests that start several JVMs"),
          ("other_lane", "======== the tests without Spark"))
_EXITS = re.compile(r"Spark and browser tests: exit (\d+);(?: the many-JVM tests: exit (\d+);)?"
                    r" the others: exit (\d+)")


def parse_log(text: str) -> dict[str, Any]:
    """What a ``test.sh`` log says: each lane's pytest summary (counts, seconds), the slowest
    tests of the Spark lanes (which list them), the exit codes and the failed tests.

    >>> log = "\\n".join(["3.50s call     tests/a.py::t", "== 2 passed, 5 deselected in 60.5s "
    ...     "(0:01:00) ==", "======== the tests that start several JVMs, run beside",
    ...     "9.00s call     tests/c.py::v", "1 passed in 40.0s (0:00:40)",
    ...     "======== the tests without Spark", "1 failed, 9 passed in 30.0s"
    ...     " (0:00:30)", "FAILED tests/b.py::u - boom",
    ...     "Spark and browser tests: exit 0; the many-JVM tests: exit 0; the others: exit 1"])
    >>> p = parse_log(log)
    >>> p["spark_lane"], p["other_lane"]["failed"], p["failed_tests"], p["slowest"][0]["s"]
    ({'passed': 2, 'failed': 0, 'seconds': 60.5}, 1, ['tests/b.py::u'], 9.0)
    >>> p["jvm_lane"]["seconds"], p["exit_codes"]["jvm_lane"]
    (40.0, 0)
    """
    lanes: dict[str, dict[str, Any]] = {}
    slowest: list[dict[str, Any]] = []
    failed: list[str] = []
    codes: dict[str, int] = {}
    lane = _LANES[0][0]
    for line in text.splitlines():
        line = line.strip()
        heading = next((name for name, head in _LANES if head and line.startswith(head)), None)
        if heading is not None:
            lane = heading
            continue
        m = _SUMMARY.match(line)
        if m and lane in lanes:  # a log cut without the headings: the others come last
            lane = "other_lane"
        if m and lane not in lanes:
            counts = dict((k, int(v)) for v, k in re.findall(r"(\d+) (passed|failed)",
                                                              m["counts"]))
            lanes[lane] = {"passed": counts.get("passed", 0),
                           "failed": counts.get("failed", 0), "seconds": float(m["s"])}
            continue
        m = _SLOW.match(line)
        if m and lane != "other_lane" and lane not in lanes:  # before the lane's summary
            slowest.append({"s": float(m["s"]), "when": m["when"], "test": m["test"]})
            continue
        if line.startswith("FAILED "):
            failed.append(line.split()[1])
        m = _EXITS.match(line)
        if m:
            codes = {"spark_lane": int(m[1]), "other_lane": int(m[3]),
                     **({} if m[2] is None else {"jvm_lane": int(m[2])})}
    slowest.sort(key=lambda t: -t["s"])
    return {"spark_lane": lanes.get("spark_lane"), "other_lane": lanes.get("other_lane"),
            **({"jvm_lane": lanes.get("jvm_lane")} if "jvm_lane" in codes
               or "jvm_lane" in lanes else {}),
            "slowest": slowest[:20], "failed_tests": failed, "exit_codes": codes}


def lanes_of(rec: dict[str, Any]) -> list[dict[str, Any] | None]:
    """The lanes a pass had to run: the Spark lane, the many-JVM lane where the log has one,
    the others."""
    return [rec["spark_lane"], *([rec["jvm_lane"]] if "jvm_lane" in rec else []),
            rec["other_lane"]]


def record(log_text: str, *, command: str, commit: str, loaded: bool, started: str,
           ended: str, rc: int | None, how: str, shuffle: int | None = None) -> dict[str, Any]:
    """One pass: its log parsed, with what ran it and when; ``within_limit`` is each lane's
    pytest time under :data:`LIMIT_S` and the pass green."""
    parsed = parse_log(log_text)
    lanes = lanes_of(parsed)
    green = rc == 0 and all(lane is not None and lane["failed"] == 0 for lane in lanes)
    slowest_lane = max((lane["seconds"] for lane in lanes if lane is not None), default=None)
    return {"kind": "test", "command": command, "commit": commit, "loaded": loaded,
            **({} if shuffle is None else {"shuffle": shuffle}), "how": how, "started": started, "ended": ended, "rc": rc, "green": green,
            "pytest_s": slowest_lane,
            "within_limit": bool(green and slowest_lane is not None
                                 and slowest_lane < LIMIT_S),
            **parsed, "machine": _machine()}


def _machine() -> dict[str, Any]:
    """The machine, without the load average of the moment the record is written (a pass's
    load is its ``loaded`` flag)."""
    m = machine()
    m.pop("load_avg_1m", None)
    return m


def _append(rec: dict[str, Any], log_text: str) -> Path:
    from benchmarks.provenance import raw_file

    LOGS.mkdir(parents=True, exist_ok=True)
    stamp = rec["started"].replace(":", "").replace("-", "")
    log = LOGS / f"{stamp}-{rec['kind']}-{rec['commit'][:10]}{'-loaded' if rec.get('loaded') else ''}.log"
    log.write_text(log_text, encoding="utf-8")
    rec["log"] = str(log.relative_to(ROOT))
    old: list[dict[str, Any]] = []
    if RAW.exists():
        got = json.loads(RAW.read_text(encoding="utf-8"))
        old = list(got.get("results", []))
    return raw_file(RAW, [*old, rec])


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _clone() -> tuple[Path, str]:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()
    work = ROOT.parent / f"fresh-clone-{commit[:10]}"
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(work)], check=True)
    return work, commit


def run_pass(kind: str, *, loaded: bool = False, param_set: str = "tiny",
             shuffle: int | None = None) -> dict[str, Any]:
    """Clone HEAD, run the test command (``kind="test"``, its tests in the order drawn from
    ``shuffle`` if given) or the main job (``kind="reproduce"``) there, record it, remove the
    clone."""
    work, commit = _clone()
    if kind == "test":
        argv = ["bash", ".ci/run"] + ([] if shuffle is None else ["--shuffle", str(shuffle)])
        if loaded:
            argv = ["./scripts/with-cpu-hog.sh", *argv]
    else:
        argv = ["./scripts/reproduce.sh", param_set]
    started = _now()
    try:
        got = subprocess.run(argv, cwd=work, capture_output=True, text=True)
        ended = _now()
        text = got.stdout + got.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)
    how = f"git clone of {commit[:10]}, then `{' '.join(argv)}` in it"
    if kind == "test":
        rec = record(text, command=" ".join(argv), commit=commit, loaded=loaded,
                     started=started, ended=ended, rc=got.returncode, how=how,
                     shuffle=shuffle)
    else:
        rec = {"kind": "reproduce", "command": " ".join(argv), "commit": commit, "how": how,
               "set": param_set, "started": started, "ended": ended, "rc": got.returncode,
               "green": got.returncode == 0, "machine": _machine()}
    _append(rec, text)
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("test", help="the README's test command on a fresh clone of HEAD")
    t.add_argument("--loaded", action="store_true", help="under scripts/with-cpu-hog.sh")
    t.add_argument("--shuffle", type=int, metavar="SEED",
                   help="the tests in an order drawn from SEED (pytest --shuffle)")
    r = sub.add_parser("reproduce", help="the README's main job on a fresh clone of HEAD")
    r.add_argument("set", nargs="?", default="tiny")
    k = sub.add_parser("record", help="a pass run by hand: its log, commit and times")
    k.add_argument("log", type=Path)
    k.add_argument("--commit", required=True)
    k.add_argument("--started", required=True, help="UTC, e.g. 2026-11-28T07:43:16Z")
    k.add_argument("--ended", required=True)
    k.add_argument("--loaded", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "record":
        text = args.log.read_text(encoding="utf-8")
        m = re.search(r"^rc=(\d+)$", text, re.M)
        cmd = ("./scripts/with-cpu-hog.sh bash .ci/run" if args.loaded else "bash .ci/run")
        rec = record(text, command=cmd, commit=args.commit, loaded=args.loaded,
                     started=args.started, ended=args.ended,
                     rc=int(m[1]) if m else None,
                     how=f"run by hand: git clone of {args.commit[:10]}, then `{cmd}` in it; "
                         "the log recorded afterwards")
        _append(rec, text)
    elif args.cmd == "test":
        rec = run_pass("test", loaded=args.loaded, shuffle=args.shuffle)
    else:
        rec = run_pass("reproduce", param_set=args.set)
    lanes = ", ".join(f"{k} {v['seconds']:.0f} s"
                      for k, _ in _LANES if (v := rec.get(k)))
    print(f"{rec['kind']} at {rec['commit'][:10]}: rc {rec['rc']}, "
          f"{'green' if rec['green'] else 'RED'}; {lanes or 'no pytest summary'}")
    return 0 if rec["green"] else 1


if __name__ == "__main__":
    sys.exit(main())
