"""``python -m reuse``: the same as the ``reuse`` console script."""

import sys

from reuse.cli import main

sys.exit(main())
