"""A pytest plugin for tests/mutation/run.py: which lines of the target modules each test runs.

Loaded only by run.py's unmutated run (`-p _coverage_plugin`, with this folder on sys.path):
for every test it records, with sys.settrace, the lines executed in the files named by
MUTATION_TARGETS (absolute paths, separated by os.pathsep) and the test's duration, and
writes {nodeid: {"seconds": s, "lines": {path: [line, ...]}}} as JSON to MUTATION_COVERAGE.
A mutant then runs only the tests that execute one of its lines (a test that never runs a
line cannot see it changed).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest

_TARGETS = set(filter(None, os.environ.get("MUTATION_TARGETS", "").split(os.pathsep)))
_OUT = os.environ.get("MUTATION_COVERAGE", "")
_RESULTS: dict[str, dict] = {}


def _tracer(hits: dict[str, set[int]]):
    def local(frame, event, arg):
        if event == "line":
            hits[frame.f_code.co_filename].add(frame.f_lineno)
        return local

    def global_(frame, event, arg):
        if frame.f_code.co_filename in hits:
            hits[frame.f_code.co_filename].add(frame.f_lineno)
            return local
        return None

    return global_


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    hits: dict[str, set[int]] = {t: set() for t in _TARGETS}
    tracer = _tracer(hits)
    old = sys.gettrace()
    threading.settrace(tracer)
    sys.settrace(tracer)
    t0 = time.monotonic()
    try:
        yield
    finally:
        sys.settrace(old)
        threading.settrace(old)  # type: ignore[arg-type]
        _RESULTS[item.nodeid] = {"seconds": time.monotonic() - t0,
                                 "lines": {t: sorted(v) for t, v in hits.items() if v}}


def pytest_sessionfinish(session, exitstatus):
    if _OUT:
        with open(_OUT, "w") as f:
            json.dump(_RESULTS, f)
