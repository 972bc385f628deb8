"""The batch driver: ``python experiments/batch.py [--set default|full|tiny] [--results DIR]``.

Runs every notebook of a parameter set through papermill (see :mod:`reuse.batch`).
"""

from __future__ import annotations

import argparse
import sys

from reuse.batch import run_batch
from reuse.errors import ReuseError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--set", default="default", help="parameter set name or YAML path")
    p.add_argument("--results", help="results folder (default: results/<set>)")
    p.add_argument("--log-output", action="store_true", help="stream notebook output")
    args = p.parse_args(argv)
    try:
        run_batch(args.set, args.results, log_output=args.log_output)
    except ReuseError as exc:
        print(f"batch: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
