"""Mutants of tests/mutation/run.py judged equivalent: no spec can tell them from the original.

Per target, mutant key -> the reason. run.py counts these apart from the survivors (the score
is killed / (total - equivalent)); an entry whose mutant no longer exists is reported.
"""

_INT_CHECKED = ("an int argument was range-checked just above; removing this `return` lets it reach the"
                " state-value check, where _outside() of an int is a folded False in every interpreter,"
                " so no check fires: the early return only saves work")
_NO_BAD_PAGES = ("the early return for `bad is False` only saves work: s._check() with a False condition"
                 " does nothing in every interpreter")
_NEVER_NEGATIVE = ("a page set is never negative (no operation of the language makes one: `~` on page sets"
                   " is refused), so the `else [-1]` branch is dead and m > 0 whenever a page is outside")
_HIGHEST_BIT = ("a page outside the pool means m.bit_length() >= size + 1, so max(m.bit_length(), x) is"
                " m.bit_length() for any x <= size + 1 (and size + 2 only adds a position whose bit is"
                " not set, which the filter drops): the pages shown are the same")

_EVERY_BINDING = ("k is never None: the bindings are every combination of argument values, and a request"
                  " argument ranges over all of 1..requests (or 0 too), which relabel_value permutes, so the"
                  " relabelled binding always exists")
_MEMO = "a memo of a pure function: without it is_req() computes the same answer again (only slower)"

EQUIVALENT: dict[str, dict[str, str]] = {
    "ownership/kernel.py": {
        "_bit:const:0->(-1)": "select()'s default is used only for an index r-1 outside 0..requests-1, and"
                              " every caller checked r (1..requests) before: the default is never read",
        "_bit:const:0->1": "as for 0->(-1): the default of select() is never read, r was checked",
        "_request:stmt:return->pass": _INT_CHECKED,
        "_key:stmt:return->pass#2": _INT_CHECKED,
        "_pages:stmt:if bad is False: return->pass": _NO_BAD_PAGES,
        "_pages:stmt:return->pass": _NO_BAD_PAGES,
        "_pages.message:args:max(m.bit_length(), size + 1)->max(size + 1, m.bit_length())": "max() is symmetric",
        "_pages.message:bool:size + 1->(size - 1)": _HIGHEST_BIT,
        "_pages.message:operand:size + 1->1": _HIGHEST_BIT,
        "_pages.message:operand:size + 1->size": _HIGHEST_BIT,
        "_pages.message:const:1->0": _HIGHEST_BIT,
        "_pages.message:const:1->2": _HIGHEST_BIT,
        "_pages.message:cmp:m >= 0->(m > 0)": _NEVER_NEGATIVE,
        "_pages.message:const:0->(-1)": _NEVER_NEGATIVE,
        "_pages.message:const:0->1": _NEVER_NEGATIVE,
        "_pages.message:invert:-1->1": _NEVER_NEGATIVE,
        "_pages.message:const:1->0#3": _NEVER_NEGATIVE,
        "_pages.message:const:1->2#3": _NEVER_NEGATIVE,
    },
    "ownership/engines/symmetry.py": {
        "apply_concrete:const:0->(-1)": "the initial fill of `out` is overwritten everywhere: position_map is a"
                                        " permutation of the positions",
        "apply_concrete:const:0->1": "as for 0->(-1): every position of `out` is written",
        "binding_map:stmt:if k is None: return None->pass": _EVERY_BINDING,
        "binding_map:stmt:return None->pass": _EVERY_BINDING,
        "_Canon.is_req:stmt:if got is not None: return got->pass": _MEMO,
        "_Canon.is_req:stmt:return got->pass": _MEMO,
        "_Canon.is_req:stmt:self.is_req_memo[n] = out->pass": _MEMO,
    },
}
