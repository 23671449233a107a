"""The Azurite server of the Azure tests (simulation/embedded_azurite.py: shared with the conformance
suite's ``--store azure``)."""

from simulation.embedded_azurite import ACCOUNT, ACCOUNT_KEY, AzureEndpoint, AzuriteServer, missing_tools

__all__ = ["ACCOUNT", "ACCOUNT_KEY", "AzureEndpoint", "AzuriteServer", "missing_tools"]
