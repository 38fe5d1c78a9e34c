"""``python -m cross_judge.cli``: the ``cross-judge`` command."""

from .main import main

raise SystemExit(main())
