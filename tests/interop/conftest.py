import pytest
from pypaimon_env import pypaimon_python


@pytest.fixture(scope="session")
def pypaimon():
    """The pypaimon 2.1.0 interpreter (built once per machine and cached)."""
    return pypaimon_python()
