"""``python -m cross_judge.testing``: run :func:`~cross_judge.testing.main`."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
