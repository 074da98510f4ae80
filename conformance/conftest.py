"""Set-up shared by the conformance suites: the torchvision stub, and the default profile.

These suites drive the real engines' classes (sglang 0.5.23, vllm 0.33.0) and need the
virtual environment that conformance/setup.sh creates; conformance/run.sh runs them there.
Without the engines every test here is skipped with the reason, never passed silently.
"""

from __future__ import annotations

import _stubs

from ownership.bridges.testing import DEFAULTS

_stubs.stub_torchvision()

# Derandomised unless the command line says otherwise: the same runs on every machine.
if DEFAULTS.profile is None:
    DEFAULTS.profile = "ci"
