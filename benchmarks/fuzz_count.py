"""Count the bad inputs the fuzz tests try (issue 34, item 3: at least 10,000, zero crashes).

Runs the fuzz tests (``tests/**/test_*_fuzz.py``; no Spark, no browser) under the ``long``
Hypothesis profile (``REUSE_FUZZ=long``, see tests/conftest.py), has them count each generated
input per door (``$REUSE_FUZZ_COUNT``), and writes the totals with the command, the git
commit, the machine and the time to ``--json``::

    .venv/bin/python benchmarks/fuzz_count.py [--profile long] [--json docs/bench/fuzz.json]

Exits non-zero when a fuzz test failed (a crash, a traceback, a changed state).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import raw_file  # noqa: E402


def fuzz_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*_fuzz.py"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", choices=["fast", "long"], default="long")
    ap.add_argument("--json", default=str(ROOT / "docs" / "bench" / "fuzz.json"))
    args = ap.parse_args()
    files = fuzz_files()
    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "counts.json"
        env = dict(os.environ, REUSE_FUZZ=args.profile, REUSE_FUZZ_COUNT=str(counts))
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
               "-m", "not spark and not browser", *files]
        t0 = time.time()
        r = subprocess.run(cmd, cwd=ROOT, env=env)
        elapsed = time.time() - t0
        got = json.loads(counts.read_text()) if counts.exists() else {"doors": {}}
    doors = dict(sorted(got["doors"].items()))
    total = sum(doors.values())
    results = {"pytest_command": " ".join(["REUSE_FUZZ=" + args.profile, "python", "-m",
                                           "pytest", *cmd[3:]]),
               "profile": args.profile, "elapsed_s": round(elapsed, 1),
               "pytest_exit": r.returncode, "crashes": 0 if r.returncode == 0 else None,
               "total_inputs": total, "doors": doors}
    for door, n in doors.items():
        print(f"{n:>8}  {door}")
    print(f"{total:>8}  in all ({args.profile} profile, {elapsed:.0f} s, pytest exit "
          f"{r.returncode})")
    raw_file(args.json, results)  # with the command, commit, machine and time
    print(f"-> {args.json}")
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
