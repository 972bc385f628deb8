"""The batch driver: ``python experiments/batch.py [--set default|full|tiny] [--results DIR]``.

Runs every notebook of a parameter set through papermill (see :mod:`reuse.figures.batch`).
"""

from __future__ import annotations

import argparse
import logging
import sys

from reuse.core.errors import ReuseError
from reuse.figures.batch import run_batch


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--set", default="default", help="parameter set name or YAML path")
    p.add_argument("--results", help="results folder (default: results/<set>)")
    p.add_argument("--quiet", action="store_true",
                   help="do not stream the notebooks' output (live runs print each step)")
    args = p.parse_args(argv)
    if not args.quiet:  # papermill logs cell output through logging at INFO
        logging.basicConfig(level=logging.INFO, format="  %(message)s")
        logging.getLogger("papermill").setLevel(logging.INFO)
        for noisy in ("traitlets", "py4j", "matplotlib", "asyncio"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        run_batch(args.set, args.results, log_output=not args.quiet)
    except ReuseError as exc:
        print(f"batch: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
