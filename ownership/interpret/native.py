"""The native interpreter: a Model's traced graphs, and the breadth-first search, compiled to C.

The batch graph (ownership.ir.graph) hash-conses the traced actions into one node table,
which the batch interpreter (ownership.interpret.batch) runs as numpy code over whole blocks;
the native interpreter writes the same node table as C (ownership.interpret.native_source,
NOTE(emit-tables)), one function that expands one packed
state (every binding in order: its spec error first, then its guard conjunct by conjunct,
stopping at the first that fails, then the successor's packed words and the kernel's flag),
and one that checks a state's properties.
Around them a fixed search in C (ownership.interpret.native_search) keeps the states in
discovery order with their parent and binding, and the visited set as an open-addressing
table of state ids, so that no Python runs per state: ownership.engines.native drives it a time slice at a time.

Semantics are the batch interpreter's, in int64, which are the concrete interpreter's on the
values the batch engine accepts (ownership.engines.batch.supports): + - * wrap as numpy does,
`//` and `%` floor (0 for a divisor of 0, as numpy gives; that step is a spec error anyway,
found by its error condition), shifts by a count outside 0..63 give what numpy gives, every
intermediate of an `If` is computed (no branch can trap). The numpy engine stays the
reference: tests/engines/test_native.py compares states, verdicts and traces on every shipped spec.

The C file is compiled by the system's C compiler (`cc`, or $CC) into a shared library kept
in a cache directory by the hash of its source, and loaded with ctypes; docs/adr/0006 says
why C through ctypes rather than numba or cffi. The cache is the user's alone and each library
is checked against the content hash recorded when it was built (NOTE(private-cache)); a
compiler that cannot build even a one-line library is bad input, not a bug of ownership.

This module is the compiled model (NativeModel); the C is written by
ownership.interpret.native_source (the search's own C in ownership.interpret.native_search)
and compiled and cached by ownership.interpret.native_build.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..errors import UsageError
from .batch import BatchModel
from .native_build import O1_BYTES, VERSION, _compiled, _no_compiler, cache_key, compiler
from .native_source import C_FIELDS, PART_BYTES, parts_for, source


class NativeModel:
    """A model's search compiled to a shared library (see the module docstring)."""

    def __init__(self, bm: BatchModel, canon: Any = None, parts: int | None = None) -> None:
        """`parts`: compile in that many translation units (NOTE(parts); None: by size)."""
        self.bm = bm
        self.canon = canon
        if bm.n_bindings > 65535:
            raise UsageError("the native engine takes at most 65,535 action bindings; use the numpy engine")
        cc = compiler()
        if cc is None:
            raise _no_compiler()
        self.lib = _compiled(cc, source(bm, canon, parts))
        L = self.lib
        L.ownership_new.restype = ctypes.c_void_p
        L.ownership_new.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
        L.ownership_run.restype = ctypes.c_int
        L.ownership_run.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        L.ownership_free.argtypes = [ctypes.c_void_p]
        L.ownership_free.restype = None
        for name in ("ownership_get", "ownership_parent", "ownership_via", "ownership_depth"):
            getattr(L, name).restype = ctypes.c_int64
            getattr(L, name).argtypes = [ctypes.c_void_p, ctypes.c_int64]
        L.ownership_get.argtypes = [ctypes.c_void_p, ctypes.c_int]
        L.ownership_state.restype = None
        L.ownership_state.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
        L.ownership_fired.restype = None
        L.ownership_fired.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        if canon is not None:
            L.ownership_canon.restype = ctypes.c_uint64
            L.ownership_canon.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    def canonicalise(self, words: Any) -> tuple[Any, Any]:
        """(representatives, stabiliser sizes) of packed rows (words x n) by the C code, as
        Canonicaliser.canonicalise gives them (for the tests: the search calls it in C)."""
        import numpy as np

        rows = np.ascontiguousarray(words.T, dtype=np.uint64)
        out = np.zeros_like(rows)
        stab = np.zeros(rows.shape[0], dtype=np.int64)
        for i in range(rows.shape[0]):
            stab[i] = self.lib.ownership_canon(rows[i].ctypes.data, out[i].ctypes.data)
        return np.ascontiguousarray(out.T), stab


# (the names other modules read from here: the C writer's and the builder's, re-exported)
__all__ = ["C_FIELDS", "O1_BYTES", "PART_BYTES", "VERSION", "NativeModel", "cache_key", "compiler", "parts_for",
           "source"]
