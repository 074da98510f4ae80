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

_SIGNATURE = ("the per-request signature only prunes which orderings canonicalise() tries: any fixed"
              " function of a request's own (non-request-id) data keeps the least row canonical (module"
              " docstring), and this mutant computes another such function (fewer fields, other widths,"
              " none at all); the representatives, and so every count, are the same")

_TWO_ARGS = ("a[2:] is () for every node that reaches this line: nth's nodes have two arguments (its"
             " default is kept apart, in the node's extra), and every other operation of the graph there"
             " has one or two (ite, select, and, or are handled above): the canonical id is the same")

_ORDERINGS = ("the orderings tried are those whose target order of signatures meets a fixed condition"
              " (weaker, reversed, partial or none): for any renaming of a state the candidate images are"
              " the same set, so the least one, the representative, is the same, and some ordering always"
              " meets the condition")
_GENERAL_PATH = ("the early return for one request or no rows is a shortcut: the general path gives the"
                 " same words and stabiliser sizes there (the identity ordering only, or empty arrays)")
_LUT_RANGE = ("the relabelling table must cover every value a request-valued slot holds, at most requests+1"
              " (r0), which every such slot's own `hi` already gives; a larger table only adds identity"
              " entries")
_BUG_ONLY = ("differs from the original only where a number is expected (ctx False) and a choice of an"
             " If or select is a request id: exactly the specs of the known bug pinned by the xfail test"
             " (tests/specs_mutation/sym_request_into_int.py), where the mutant refuses, as a fixed check"
             " must, and the original accepts; on every other spec the two give the same answer")
_UNREACHABLE = "every state position belongs to a slot: the fallback name is never returned"
_OVERWRITTEN = "the initial fill is overwritten everywhere: the loop below writes every element"

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
        "equivariance_problem:stmt:if bmap is None: return \"renaming requests turns an action binding ...->pass": _EVERY_BINDING,
        "equivariance_problem:stmt:return \"renaming requests turns an action binding into one that doe...->pass": _EVERY_BINDING,
        "equivariance_problem:return:\"renaming requests turns an action binding into one that does not e...->None": _EVERY_BINDING,
        "equivariance_problem:stmt:return None->pass": "the last statement of the function: it returns None anyway",
        "_Canon._slot:stmt:return \"?\"->pass": _UNREACHABLE,
        "_Canon._slot:return:\"?\"->''": _UNREACHABLE,
        "_Canon._of:operand:ctx and not isinstance(v, bool)->ctx": "a constant is read in a request-id context"
            " (ctx True) only as a choice of an If or select of request ids, or compared with one: an int,"
            " never a bool (the sorts refuse mixing), so the bool test never decides",
        "_Canon._of:operand:ctx or self.is_req(a[1]) or self.is_req(a[2])->(ctx or self.is_req(a[2]))": _BUG_ONLY,
        "_Canon._of:const:1->0#3": _BUG_ONLY,
        "_Canon._of:const:1->2#3": _BUG_ONLY,
        "_Canon._of:loop:values->list(values)[1:]": _BUG_ONLY,
        "_Canon._of:loop:values->list(values)[:1]": _BUG_ONLY,
        "_Canon._of:args:relabel_value(self.model, self.perm, default)->relabel_value(self.perm, self.model, default)":
            "the default of a select of request ids is 0 (none), for which relabel_value returns it before"
            " reading either argument",
        "equivariance_problem:const:1->2#2": "the identity permutation gets an extra element n+1, which no"
                                             " request (1..n) ever reads",
        "_Canon._operands:operand:node.op == op and node.sort == self.g.nodes[n].sort->(node.op == op)":
            "nested nodes of one AC operation have one sort (the sort of an &, |, ^, +, * is its operands')",
        "Canonicaliser.__init__:stmt:self.model = model->pass": "self.model is not read after __init__",
        "Canonicaliser.__init__:const:2->1": "order *= 1 changes nothing: the product 1*2*...*R is the same",
        "Canonicaliser.__init__:const:0->(-1)": _SIGNATURE,
        "Canonicaliser.__init__:const:0->1": _SIGNATURE,
        "Canonicaliser.__init__:stmt:for s in model.slots: if s.shape != \"request\" or isinstance(s.domai...->pass": _SIGNATURE,
        "Canonicaliser.__init__:loop:model.slots->list(model.slots)[1:]": _SIGNATURE,
        "Canonicaliser.__init__:loop:model.slots->list(model.slots)[:1]": _SIGNATURE,
        "Canonicaliser.__init__:args:max(0, (s.hi - s.lo).bit_length())->max((s.hi - s.lo).bit_length(), 0)": _SIGNATURE,
        "Canonicaliser.__init__:const:0->(-1)#2": _SIGNATURE,
        "Canonicaliser.__init__:const:0->1#2": _SIGNATURE,
        "Canonicaliser.__init__:bool:s.hi - s.lo->(s.hi + s.lo)": _SIGNATURE,
        "Canonicaliser.__init__:operand:s.hi - s.lo->s.hi": _SIGNATURE,
        "Canonicaliser.__init__:operand:s.hi - s.lo->s.lo": _SIGNATURE,
        "Canonicaliser.__init__:stmt:if bits == 0: continue->pass": _SIGNATURE,
        "Canonicaliser.__init__:cmp:bits == 0->(bits != 0)": _SIGNATURE,
        "Canonicaliser.__init__:const:0->(-1)#3": _SIGNATURE,
        "Canonicaliser.__init__:const:0->1#3": _SIGNATURE,
        "Canonicaliser.__init__:stmt:continue->pass#2": _SIGNATURE,
        "Canonicaliser.__init__:stmt:if used + bits > 64: break->pass": _SIGNATURE,
        "Canonicaliser.__init__:bool:used + bits->(used - bits)": _SIGNATURE,
        "Canonicaliser.__init__:operand:used + bits->bits": _SIGNATURE,
        "Canonicaliser.__init__:operand:used + bits->used": _SIGNATURE,
        "Canonicaliser.__init__:cmp:used + bits > 64->(used + bits >= 64)": _SIGNATURE,
        "Canonicaliser.__init__:const:64->63": _SIGNATURE,
        "Canonicaliser.__init__:const:64->65": _SIGNATURE,
        "Canonicaliser.__init__:stmt:break->pass": _SIGNATURE,
        "Canonicaliser.__init__:stmt:sig.append((s.offset, s.lo, bits))->pass": _SIGNATURE,
        "Canonicaliser.__init__:stmt:used += bits->pass": _SIGNATURE,
        "Canonicaliser.__init__:operand:[s.hi for s in model.slots if isinstance(s.domain, RequestDomain)] ...->([R + 1])": _LUT_RANGE,
        "Canonicaliser.__init__:loop:model.slots->list(model.slots)[1:]#2": _LUT_RANGE,
        "Canonicaliser.__init__:loop:model.slots->list(model.slots)[:1]#2": _LUT_RANGE,
        "Canonicaliser.__init__:operand:R + 1->R#2": _LUT_RANGE,
        "Canonicaliser.__init__:const:1->0#3": _LUT_RANGE,
        "Canonicaliser.__init__:const:1->2#3": _LUT_RANGE,
        "Canonicaliser.__init__:const:1->2#8": _LUT_RANGE,
        "Canonicaliser.__init__:const:0->(-1)#4": _OVERWRITTEN,
        "Canonicaliser.__init__:const:0->1#4": _OVERWRITTEN,
        "Canonicaliser.__init__:loop:range(model.width)->list(range(model.width))[1:]#2": "position 0 would"
            " write src[pos[0]] = 0, which the initial fill of src already holds",
        "Canonicaliser.__init__:const:0->(-1)#5": _OVERWRITTEN,
        "Canonicaliser.__init__:const:0->1#5": _OVERWRITTEN,
        "Canonicaliser.signatures:stmt:for r in range(self.requests): for off, lo, bits in self.sig: col =...->pass": _SIGNATURE,
        "Canonicaliser.signatures:stmt:for off, lo, bits in self.sig: col = X[off + r] - lo if lo else X[o...->pass": _SIGNATURE,
        "Canonicaliser.signatures:loop:self.sig->list(self.sig)[1:]": _SIGNATURE,
        "Canonicaliser.signatures:loop:self.sig->list(self.sig)[:1]": _SIGNATURE,
        # every request gets request 1's column: one signature for all, so every ordering is
        # tried (the full R! search of the least row), only slower
        "Canonicaliser.signatures:operand:off + r->off": _SIGNATURE,
        "Canonicaliser.signatures:operand:off + r->off#2": _SIGNATURE,
        "_Canon._of:ite:a[2:] if op == \"nth\" else ()->(() if op == 'nth' else a[2:])": _TWO_ARGS,
        "_Canon._of:cmp:op == \"nth\"->(op != 'nth')#2": _TWO_ARGS,
        "_Canon._of:const:2->3#4": _TWO_ARGS,
        "Canonicaliser.signatures:bool:X[off + r] - lo->(X[off + r] + lo)": _SIGNATURE,
        "Canonicaliser.signatures:operand:X[off + r] - lo->X[off + r]": _SIGNATURE,
        "Canonicaliser.signatures:ite:X[off + r] - lo if lo else X[off + r]->(X[off + r] if lo else X[off + r] - lo)": _SIGNATURE,
        "Canonicaliser.signatures:stmt:out[r] = (out[r] << np.uint64(bits)) | col.astype(np.uint64)->pass": _SIGNATURE,
        "Canonicaliser.signatures:bool:(out[r] << np.uint64(bits)) | col.astype(np.uint64)->(out[r] << np.uint64(bits) & col.astype(np.uint64))": _SIGNATURE,
        "Canonicaliser.signatures:operand:(out[r] << np.uint64(bits)) | col.astype(np.uint64)->(out[r] << np.uint64(bits))": _SIGNATURE,
        "Canonicaliser.signatures:operand:(out[r] << np.uint64(bits)) | col.astype(np.uint64)->col.astype(np.uint64)": _SIGNATURE,
        "Canonicaliser.canonicalise:stmt:if self.requests < 2 or n == 0: return words, np.ones(n, dtype=np.i...->pass": _GENERAL_PATH,
        "Canonicaliser.canonicalise:bool:self.requests < 2 or n == 0->(self.requests < 2 and n == 0)": _GENERAL_PATH,
        "Canonicaliser.canonicalise:operand:self.requests < 2 or n == 0->(n == 0)": _GENERAL_PATH,
        "Canonicaliser.canonicalise:operand:self.requests < 2 or n == 0->(self.requests < 2)": _GENERAL_PATH,
        "Canonicaliser.canonicalise:const:2->1": _GENERAL_PATH,
        "Canonicaliser.canonicalise:const:0->(-1)": _GENERAL_PATH,
        "Canonicaliser.canonicalise:stmt:return words, np.ones(n, dtype=np.int64)->pass": _GENERAL_PATH,
        "Canonicaliser.canonicalise:args:zip(rho, rho[1:])->zip(rho[1:], rho)": _ORDERINGS,
        "Canonicaliser.canonicalise:loop:zip(rho, rho[1:])->list(zip(rho, rho[1:]))[:1]": _ORDERINGS,
        "Canonicaliser.canonicalise:const:1->0": _ORDERINGS,
        "Canonicaliser.canonicalise:bool:ok & (sig[a - 1] <= sig[b - 1])->(ok | (sig[a - 1] <= sig[b - 1]))": _ORDERINGS,
        "Canonicaliser.canonicalise:operand:ok & (sig[a - 1] <= sig[b - 1])->(sig[a - 1] <= sig[b - 1])": _ORDERINGS,
        "Canonicaliser.canonicalise:stmt:if rows.size == 0: continue->pass": "an ordering that no row meets updates"
            " nothing: the same loop body on empty arrays",
        "Canonicaliser.canonicalise:const:0->(-1)#2": "rows.size == -1 never holds: the same as removing the"
            " shortcut for an ordering no row meets, which updates nothing",
        "Canonicaliser.canonicalise:stmt:continue->pass": "as for removing the shortcut: an ordering no row meets"
            " updates nothing",
        "Canonicaliser.canonicalise:cmp:rows.size < n->(rows.size <= n)": "when every row meets the ordering,"
            " X[np.ix_(gather, rows)] is X[gather]: the shortcut only saves a copy",
    },
}
