"""``python -m reuse``: the same as the ``reuse`` console script."""

import sys

from reuse.cli import main

if __name__ == "__main__":
    sys.exit(main())
