"""``paimon-py``, the command line over impl's public API (``python -m impl.cli``).

``main`` parses the arguments and runs a command (:mod:`impl.cli.main`); the commands are in
:mod:`impl.cli.commands`, ``--where`` filters in :mod:`impl.predicate.where`, text and JSON output in
:mod:`impl.cli.output`.
"""

from impl.cli.main import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, EXIT_USER_ERROR, main

__all__ = ["main", "EXIT_OK", "EXIT_USER_ERROR", "EXIT_USAGE", "EXIT_INTERNAL"]
