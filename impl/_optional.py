"""Optional libraries, imported on first use, and the extra that installs each.

A missing one raises :class:`impl.errors.MissingExtraError` (an ImportError) naming the extra,
instead of a bare ``No module named ...`` after work has already been done.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from impl.errors import MissingExtraError

# The top-level module of each optional library and the pyproject.toml extra that installs it.
EXTRAS: dict[str, str] = {
    "pyspark": "spark",
    "pandas": "pandas",
    "duckdb": "duckdb",
    # a core dependency too (manifest decoding, with fastavro as the fallback); the extra names it
    # for Polars as a reader of tables
    "polars": "polars",
    "ray": "ray",
    "rich": "sim",
    "matplotlib": "sim",
    "moto": "s3-server",
    "s3fs": "s3",
    "adlfs": "azure",
    "gcsfs": "gcs",
    "psycopg": "postgresql",
}


def require(module: str, purpose: str, extra: str | None = None) -> ModuleType:
    """Import ``module`` (``"pyspark.sql"`` and the like work too) or raise MissingExtraError
    naming the extra of its top-level package (``extra`` overrides) and what needed it."""
    top = module.split(".", 1)[0]
    try:
        return importlib.import_module(module)
    except MissingExtraError:
        raise  # an impl package that already named the extra it lacks
    except ImportError as e:
        # e.name: the module that was missing, which may be a dependency of the library (flask
        # for moto's server); the same extra installs it
        raise MissingExtraError(e.name or top, extra or EXTRAS[top], purpose) from e

