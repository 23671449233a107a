"""``python -m impl.cli``: the ``paimon-py`` command line."""

from impl.cli.main import main

raise SystemExit(main())
