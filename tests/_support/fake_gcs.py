"""The fake-gcs-server of the GCS tests (simulation/embedded_gcs.py: shared with the conformance
suite's ``--store gcs``)."""

from simulation.embedded_gcs import PROJECT, FakeGcsServer, GcsEndpoint, missing_tools

__all__ = ["PROJECT", "FakeGcsServer", "GcsEndpoint", "missing_tools"]
