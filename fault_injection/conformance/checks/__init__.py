"""The conformance checks; each returns :class:`CheckResult` records (see result.py)."""
