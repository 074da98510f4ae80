"""Traces: a counterexample as data, its ITF JSON form, and replay against a spec.

A Trace is the initial state, then each step's action with its arguments and the state after
it, plus the violation (property, step, message, requests, pages). States are stored as named
values (`Model.show`), so a trace is rendered and exported without the spec, and read back
without executing anything: `read_itf` only parses JSON. `replay` re-executes a trace's
actions on a Model, which answers "does this fix kill this trace?".

ITF (the Informal Trace Format of Apalache and Quint): docs/trace-format.md.

This module is where the rest of the package and its users import traces from; the work is
done in ownership/traces/: data.py (Trace, Step, Violation), messages.py (build_trace and
each violation's words), json_values.py (reading untrusted JSON), itf.py (ITF reading and
writing), files.py (writing a file whole or not at all) and replay.py.
"""

from __future__ import annotations

from .traces.data import Step, Trace, Violation
from .traces.files import whole_file, write_output
from .traces.itf import (
    FORMAT_VERSION,
    ITF_DESCRIPTION,
    MAX_TRACE_BYTES,
    from_itf,
    read_itf,
    to_itf,
    write_itf,
)
from .traces.json_values import MAX_DEPTH, MAX_DIGITS, parse_json, unique_keys
from .traces.messages import build_trace, explain
from .traces.replay import ReplayResult, replay

__all__ = [
    "FORMAT_VERSION",
    "ITF_DESCRIPTION",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_TRACE_BYTES",
    "ReplayResult",
    "Step",
    "Trace",
    "Violation",
    "build_trace",
    "explain",
    "from_itf",
    "parse_json",
    "read_itf",
    "replay",
    "to_itf",
    "unique_keys",
    "whole_file",
    "write_itf",
    "write_output",
]
