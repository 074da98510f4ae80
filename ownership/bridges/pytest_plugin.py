"""The pytest plugin of ownership (entry point `pytest11`): options for ownership.bridges.testing.

    pytest --ownership-profile ci --ownership-runs 500

`--ownership-profile`: "default" (random, with the example database under .ownership/),
"ci" (derandomised: the same runs on every machine) or a registered Hypothesis profile;
without it, "ci" when the CI environment variable is set. `--ownership-runs` and
`--ownership-steps`: runs per check and steps per run, for every check_spec and
check_conformance call that does not pass its own. `--ownership-seed` repeats a search;
pytest's own `--hypothesis-seed` is honoured too. Each check's seed is recorded as the JUnit
property `ownership_seed` of its test. Ctrl-C ends the session (a check it stopped raises
KeyboardInterrupt, never a failed test).
"""

from __future__ import annotations

from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("ownership", "ownership: spec and conformance checks (ownership.bridges.testing)")
    group.addoption("--ownership-profile", default=None, metavar="NAME",
                    help="fuzz profile: default, ci (derandomised), or a registered Hypothesis profile"
                         " (default: ci when $CI is set, else default)")
    group.addoption("--ownership-runs", type=int, default=None, metavar="N",
                    help="runs per check_spec / check_conformance call (default 100)")
    group.addoption("--ownership-steps", type=int, default=None, metavar="N",
                    help="steps per run (default 50)")
    group.addoption("--ownership-seed", type=int, default=None, metavar="N",
                    help="seed for every check, to repeat a search")


def pytest_configure(config: Any) -> None:
    from .testing import DEFAULTS

    profile = config.getoption("--ownership-profile")
    runs = config.getoption("--ownership-runs")
    steps = config.getoption("--ownership-steps")
    for name, value in (("--ownership-runs", runs), ("--ownership-steps", steps)):
        if value is not None and value < 1:
            raise pytest.UsageError(f"{name}={value}: must be at least 1")
    if profile is not None:
        DEFAULTS.profile = profile
    if runs is not None:
        DEFAULTS.runs = runs
    if steps is not None:
        DEFAULTS.steps = steps
    seed = config.getoption("--ownership-seed")
    if seed is not None:
        DEFAULTS.seed = seed


def pytest_report_header(config: Any) -> str:
    from .testing import DEFAULTS

    seed = f", seed {DEFAULTS.seed}" if DEFAULTS.seed is not None else ""
    return f"ownership: profile {DEFAULTS.resolved_profile()}, {DEFAULTS.runs} runs of up to {DEFAULTS.steps} steps{seed}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    """The seed of every check a test ran, as the JUnit property `ownership_seed` (one each):
    a CI failure names the seed that repeats it (`--ownership-seed N`).

    While the test runs, Ctrl-C is raised at a safe point (NOTE(safe-stop) in
    ownership/limits.py): inside Hypothesis's gc callback it was dropped, and the fuzz search
    went on. A check that Ctrl-C stopped raises KeyboardInterrupt (ownership.bridges.testing), which
    ends the session."""
    from ..limits import interrupts_at_safe_points
    from .testing import DEFAULTS

    DEFAULTS.seeds_used.clear()
    with interrupts_at_safe_points():
        yield
    for seed in DEFAULTS.seeds_used:
        item.user_properties.append(("ownership_seed", seed))
    DEFAULTS.seeds_used.clear()
