"""The pypaimon 2.1.0 venv helper for the tests: it lives in the package
(fault_injection/conformance/pypaimon_env.py) so that the installed conformance CLI finds it too."""

from fault_injection.conformance.pypaimon_env import (  # noqa: F401 - re-exported for the tests
    PYPAIMON_VERSION,
    READ_TABLE,
    cache_dir,
    pypaimon_python,
    run_pypaimon,
)
