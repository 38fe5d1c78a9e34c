"""``python -m cross_judge.cli``: the ``cross-judge`` command."""

from ._main import main

raise SystemExit(main())
