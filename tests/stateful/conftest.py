"""Hypothesis profiles of the stateful suite, and the count of examples each run executed.

Profiles (pick one with ``HYPOTHESIS_PROFILE``; the default is ``ci``):

- ``ci``: the budget of a CI pass. ``pytest tests/stateful tests/concurrency -n 2`` stays well
  under 5 minutes on 2 cores.
- ``deep``: 25x the examples of ``ci`` and longer step sequences, for a nightly or manual run.
- ``mutation``: a small budget for mutation testing, where every mutant reruns the suite.

The profiles are registered as ``stateful-ci`` / ``stateful-deep`` (and as ``ci`` / ``deep``
unless another conftest registered those names first), never loaded globally, so other suites
keep their own Hypothesis settings; the state machines fetch ``stateful-<HYPOTHESIS_PROFILE>``.

Every state-machine test appends ``("hypothesis_examples", n)`` and ``("hypothesis_steps", n)``
to its report's ``user_properties`` (which xdist ships to the controller); the terminal summary
below adds them up, so a CI log shows how many examples the pass actually ran.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_CI_EXAMPLES = 150
_DEEP_FACTOR = 25

_PROFILES = {
    "ci": settings(
        max_examples=_CI_EXAMPLES,
        stateful_step_count=30,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
        print_blob=True,
    ),
}
_PROFILES["deep"] = settings(_PROFILES["ci"], max_examples=_CI_EXAMPLES * _DEEP_FACTOR, stateful_step_count=50)
# For mutation testing (docs/mutation.md): every mutant reruns the suite, so a small budget.
_PROFILES["mutation"] = settings(_PROFILES["ci"], max_examples=25, print_blob=False)

for _name, _profile in _PROFILES.items():
    # "stateful-<name>" is ours alone. The bare name is registered only if nobody else did:
    # re-registering the profile another conftest loaded would change every suite's defaults.
    settings.register_profile(f"stateful-{_name}", _profile)
    try:
        settings.get_profile(_name)
    except Exception:  # noqa: BLE001 - InvalidArgument: not registered yet
        settings.register_profile(_name, _profile)


def profile_name() -> str:
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    if name not in _PROFILES:
        raise ValueError(f"HYPOTHESIS_PROFILE={name!r}: the stateful suite knows {sorted(_PROFILES)}")
    return name

def pytest_report_header(config):
    return f"stateful suite: Hypothesis profile {profile_name()!r}"
