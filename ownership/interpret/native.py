"""The native interpreter: a Model's traced graphs, and the breadth-first search, compiled to C.

The batch graph (ownership.ir.graph) hash-conses the traced actions into one node table,
which the batch interpreter (ownership.interpret.batch) runs as numpy code over whole blocks;
this module writes the same node table as C (the walk of ownership.interpret.emit, each
operation written from `_C.FORMS`: NOTE(emit-tables)), one function that expands one packed
state (every binding in order: its spec error first, then its guard conjunct by conjunct,
stopping at the first that fails, then the successor's packed words and the kernel's flag),
and one that checks a state's properties.
Around them a fixed search in C (`_SEARCH` below) keeps the states in discovery order with
their parent and binding, and the visited set as an open-addressing table of state ids, so
that no Python runs per state: ownership.engines.native drives it a time slice at a time.

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
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import signal
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..errors import UsageError, shorten
from ..ir.graph import Graph
from .batch import BOOL, BatchModel, WordWrites
from .emit import COMMON_FORMS, Emitter, FieldForm, Form

#: Bump when the generated code or the search template changes meaning (cache key).
VERSION = 7

_PRELUDE = r"""
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* (mremap: NOTE(memory)) */
#endif
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
typedef int64_t i64;
typedef uint64_t u64;
#ifndef PART
#define PART 0
#endif
#define HIDDEN __attribute__((visibility("hidden")))
static inline i64 w_add(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
static inline i64 w_sub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
static inline i64 w_mul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
static inline i64 w_neg(i64 a) { return (i64)(0 - (u64)a); }
static inline i64 f_div(i64 a, i64 b) {
    if (b == 0) return 0;
    if (b == -1) return w_neg(a);
    i64 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}
static inline i64 f_mod(i64 a, i64 b) {
    if (b == 0 || b == -1) return 0;
    i64 r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
static inline i64 f_shl(i64 a, i64 b) { return ((u64)b < 64) ? (i64)((u64)a << b) : 0; }
static inline i64 f_shr(i64 a, i64 b) { return ((u64)b < 64) ? (a >> b) : (a < 0 ? -1 : 0); }
static inline i64 f_bit(i64 p) { return (p >= 0 && p < 64) ? (i64)((u64)1 << p) : 0; }
static inline i64 f_popcount(i64 m) { return (i64)__builtin_popcountll((u64)m); }
static inline i64 f_first(i64 m, i64 n) {
    u64 rest = (u64)m, out = 0;
    for (i64 i = 0; i < n && rest; i++) { u64 low = rest & (0 - rest); out |= low; rest ^= low; }
    return (i64)out;
}
static inline i64 f_nth(i64 m, i64 j, i64 dflt) {
    if (j < 0) return dflt;
    u64 rest = (u64)m;
    for (i64 i = 0; rest; i++) {
        u64 low = rest & (0 - rest);
        if (i == j) return (i64)__builtin_ctzll(low);
        rest ^= low;
    }
    return dflt;
}
"""


#: How a field's value goes into a packed word, in C (ownership.interpret.emit.FieldForm).
C_FIELDS = FieldForm(word="(u64)({v})", offset="{v} - {lo}LL", condition="(u64)(({v} != 0))", mask="({v} & {mask}ULL)",
                     always_mask=True)


class _C(Emitter):
    """C statements for a set of root nodes within one block, each node computed once (the
    walk of ownership.interpret.emit, in the numpy emitter's order of nodes)."""

    BACKEND = "C"

    def __init__(self, graph: Graph, indent: str, fields: list[Any]) -> None:
        super().__init__(graph)
        self.fields = fields   # (a state position is read straight from the packed words P)
        self.indent = indent

    def literal(self, v: Any, *, as_int: bool = False, as_bool: bool = False) -> str:
        return f"({_literal(v)} != 0)" if as_bool else _literal(v)

    def coerce(self, name: str, sort: str, *, as_int: bool, as_bool: bool) -> str:
        return f"({name} != 0)" if as_bool else name   # (a condition is 0 or 1 in an i64)

    def column(self, position: int) -> str:
        return _field(self.fields[position])

    def _line(self, n: int) -> str:
        node = self.g.nodes[n]
        if node.op == "stack":  # NOTE(select-array): an array, read by every select of it
            if not node.args:
                return f"{self.indent}/* t{n}: an empty array */"
            return f"{self.indent}const i64 t{n}[{len(node.args)}] = {{{', '.join(self.ref(v) for v in node.args)}}};"
        values = self.constant_values(node) if node.op == "select" else None
        if values:
            table = f"{self.indent}static const i64 t{n}_table[] = {{{', '.join(map(_literal, values))}}};"
            return f"{table}\n{self.indent}i64 t{n} = {self._expr(n)};"
        return f"{self.indent}i64 t{n} = {self._expr(n)};"

    def _select(self, n: int) -> str:
        """values[idx] (NOTE(select-array)): an index into an array, not a chain of comparisons:
        _copy_keys reads one key a destination page (a select over every source page), so a
        chain was quadratic in the pool's pages, megabytes of C for a pool of 100 pages."""
        node = self.g.nodes[n]
        stack, idx, default = node.args
        size = len(self.g.nodes[stack].args)
        if size == 0:
            return _literal(default)
        array = f"t{n}_table" if self.constant_values(node) is not None else self.ref(stack)
        i = self.ref(idx)
        return f"(((u64)({i})) < {size}ULL ? {array}[{i}] : {_literal(default)})"

    #: NOTE(emit-tables): how C writes each operation (the functions are in _PRELUDE)
    FORMS = {
        **COMMON_FORMS,
        "add": Form("w_add({0}, {1})"),
        "sub": Form("w_sub({0}, {1})"),
        "mul": Form("w_mul({0}, {1})"),
        "div": Form("f_div({0}, {1})"),
        "mod": Form("f_mod({0}, {1})"),
        "neg": Form("w_neg({0})"),
        "shl": Form("f_shl({0}, {1})"),
        "shr": Form("f_shr({0}, {1})"),
        "not": Form("({0} == 0)"),
        "ite": Form("({0} ? {1} : {2})", ("bool", "sort", "sort")),
        "bit": Form("f_bit({0})"),
        "popcount": Form("f_popcount({0})"),
        "first": Form("f_first({0}, {1})"),
        "nth": Form("f_nth({0}, {1}, {2})"),
        "select": _select,
    }


def _field(f: Any) -> str:
    """The value of one state position, read from the packed words P."""
    if f.bits == 0:
        return f"{f.lo}LL"
    v = f"(P[{f.word}] >> {f.shift})" if f.shift else f"P[{f.word}]"
    if f.bits < 64:
        v = f"({v} & {(1 << f.bits) - 1}ULL)"
    return f"((i64){v}" + (f" + {f.lo}LL)" if f.lo else ")")


def _literal(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    v = int(v)
    if v == -(1 << 63):
        return "(-9223372036854775807LL - 1)"
    return f"{v}LL"


def _canon_source(canon: Any, lay: Any) -> list[str]:
    """C for symmetry reduction: `canon(P, out)` writes the representative of packed state P
    under request renaming and returns its stabiliser's size, exactly as
    ownership.engines.symmetry.Canonicaliser.canonicalise does for one row (the same
    signatures, the same stable ranking, the same orderings tried, the same least row)."""
    R = canon.requests
    moved = [int(x) for x in canon.moved]
    req_rows = [int(x) for x in canon.req_rows]
    changed = sorted(set(moved) | set(req_rows))
    needed = sorted(set(changed) | {off + r for off, _, _ in canon.sig for r in range(R)} | set(canon.appear))
    out = [f"#define REQUESTS {R}", f"#define ORDER {canon.order}ULL", f"#define TOP {canon.top}"]
    # rename: X (the unpacked positions used) by the ordering ord (ord[j]: the request, 0-based,
    # that becomes request j + 1): every per-request slot's elements move, request ids relabel
    out.append("static void rename(const i64 *X, const int *ord, const u64 *P, u64 *out) {")
    out.append("    int lab[TOP + 1];")
    out.append("    for (int v = 0; v <= TOP; v++) lab[v] = v;")
    out.append("    for (int j = 0; j < REQUESTS; j++) lab[1 + ord[j]] = j + 1;")
    where = {}
    # each group of columns that renaming permutes (a per-request slot's elements, or one limb
    # of a wide one's: NOTE(wide-symmetry) of the symmetry module) is evenly spaced
    for group in ([int(x) for x in row] for row in canon.groups):
        step = group[1] - group[0] if R > 1 else 1
        if step < 1 or any(group[r] != group[0] + r * step for r in range(R)):
            raise AssertionError(f"the columns {group} of a per-request slot are not evenly spaced")
        at = "" if step == 1 else f"{step} * "
        for j in range(R):
            where[group[j]] = f"X[{group[0]} + {at}ord[{j}]]"
    keep = [(1 << 64) - 1] * lay.words
    for i in changed:
        f = lay.fields[i]
        v = where.get(i, f"X[{i}]")
        if i in req_rows:
            v = f"lab[{v}]"
        out.append(f"    i64 y{i} = {v};")
        if f.bits:
            keep[f.word] &= ~(((1 << f.bits) - 1) << f.shift) & ((1 << 64) - 1)
    pieces = C_FIELDS.pieces((lay.fields[i], f"y{i}", False) for i in changed if lay.fields[i].bits)
    for wd in range(lay.words):
        expr = f"(P[{wd}] & {keep[wd]}ULL)"
        for piece in pieces.get(wd, []):
            expr += f" | {piece}"
        out.append(f"    out[{wd}] = {expr};")
    out.append("}")
    out.append("static int next_order(int *p, int n) {   /* the next permutation of p[0..n); 0 after the last */")
    out.append("    int i = n - 2;")
    out.append("    while (i >= 0 && p[i] >= p[i + 1]) i--;")
    out.append("    if (i < 0) { for (int a = 0, b = n - 1; a < b; a++, b--) { int t = p[a]; p[a] = p[b]; p[b] = t; } return 0; }")
    out.append("    int j = n - 1;")
    out.append("    while (p[j] <= p[i]) j--;")
    out.append("    int t = p[i]; p[i] = p[j]; p[j] = t;")
    out.append("    for (int a = i + 1, b = n - 1; a < b; a++, b--) { t = p[a]; p[a] = p[b]; p[b] = t; }")
    out.append("    return 1;")
    out.append("}")
    if canon.complete:
        sizes = ", ".join(f"{int(x)}ULL" for x in canon.tie_sizes)
        out.append(f"static const u64 TIE_SIZES[] = {{{sizes}}};")
    out.append("static u64 canon(const u64 *P, u64 *out) {")
    # (a wide page set's limbs are columns after the positions: NOTE(wide-symmetry) of the symmetry module)
    out.append("    i64 X[WIDTH];" if lay.columns == lay.width else f"    i64 X[{lay.columns}];")
    for i in needed:
        out.append(f"    X[{i}] = {_field(lay.fields[i])};")
    out.append("    u64 sig[REQUESTS];")
    for r in range(R):
        terms = "0ULL"
        for off, lo, bits in canon.sig:
            col = f"(u64)(X[{off + r}]" + (f" - {lo}LL" if lo else "") + ")"
            terms = f"(({terms} << {bits}) | {col})"
        for i in canon.appear:
            terms = f"(({terms} << 1) | (u64)(X[{i}] == {r + 1}))"
        out.append(f"    sig[{r}] = {terms};")
    out.append("    int ord[REQUESTS];   /* a stable ranking of the signatures (numpy's argsort, kind=stable) */")
    out.append("    for (int j = 0; j < REQUESTS; j++) {")
    out.append("        int k = j;")
    out.append("        while (k > 0 && sig[ord[k - 1]] > sig[j]) { ord[k] = ord[k - 1]; k--; }")
    out.append("        ord[k] = j;")
    out.append("    }")
    out.append("    unsigned pattern = 0;   /* bit j: ranks j and j + 1 tie */")
    out.append("    for (int j = 0; j + 1 < REQUESTS; j++) if (sig[ord[j + 1]] == sig[ord[j]]) pattern |= 1u << j;")
    if canon.complete:  # NOTE(complete-signature) of the symmetry module: one renaming
        out.append("    rename(X, ord, P, out);")
        out.append("    return TIE_SIZES[pattern];")
        out.append("}")
        return out
    out.append("    if (!pattern) { rename(X, ord, P, out); return 1; }")
    out.append("    int starts[REQUESTS + 1], runs = 0;   /* the runs of tied ranks */")
    out.append("    starts[runs++] = 0;")
    out.append("    for (int j = 1; j < REQUESTS; j++) if (!(pattern >> (j - 1) & 1)) starts[runs++] = j;")
    out.append("    starts[runs] = REQUESTS;")
    out.append("    int p[REQUESTS], cur[REQUESTS];")
    out.append("    for (int j = 0; j < REQUESTS; j++) p[j] = j;")
    out.append("    u64 w[WORDS]; u64 count = 0;")
    out.append("    for (;;) {   /* every ordering that permutes ranks within runs only: the least row, and how often */")
    out.append("        for (int j = 0; j < REQUESTS; j++) cur[j] = ord[p[j]];")
    out.append("        rename(X, cur, P, w);")
    out.append("        int less = 0, same = 1;")
    out.append("        if (count) for (int i = 0; i < WORDS && same; i++) { if (w[i] != out[i]) { same = 0; less = w[i] < out[i]; } }")
    out.append("        if (!count || less) { memcpy(out, w, sizeof(w)); count = 1; }")
    out.append("        else if (same) count++;")
    out.append("        int k = 0;")
    out.append("        while (k < runs && !next_order(p + starts[k], starts[k + 1] - starts[k])) k++;")
    out.append("        if (k == runs) break;")
    out.append("    }")
    out.append("    return count;")
    out.append("}")
    return out


#: NOTE(parts): a model of pools of dozens of pages has per-page fields that every kernel
#: operation reads and writes, so its C is megabytes of straight-line code (2.3 MB at 62 pages
#: of sglang_pd, 8 MB at 128), which gcc -O2 compiled in 37 s and 6 min as one file. Each
#: binding is its own function, and above PART_BYTES of them the bindings are dealt to as many
#: translation units as the machine has processors (the largest first, to the least loaded),
#: compiled at once and linked. The code each part holds is the same, so are the states.
PART_BYTES = 200_000
#: Above O1_BYTES of C, gcc -O1 with a one-region, priority register allocator (_LARGE): -O2
#: took twice as long to compile 2.3 MB, for a search 10% faster (1.5 M states of sglang_pd at
#: 62 pages in 3.6 s against 4.0 s, after 39 s of compiling against 17 s), and register
#: allocation was a third of -O1's time on 3 MB, 30% less with these two options.
O1_BYTES = 1_000_000
_LARGE = ["-O1", "-fira-region=one", "-fira-algorithm=priority"]


def parts_for(size: int, parts: int | None) -> int:
    """How many translation units `size` bytes of bindings' code are compiled in."""
    if parts is not None:
        return max(1, parts)
    if size < PART_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, 8, size // PART_BYTES))


#: What a C comment may hold as it is: letters, digits and the punctuation of a label.
_COMMENT_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _=(),.-:[]'")


def _comment(text: str) -> str:
    """`text` (a binding's label: spec names, enum members) for the inside of a C comment: any
    other character as \\x.. or \\u...., so that no `*/` or line break from a spec ends the
    comment (issue 29: a member named with `*/` changed the compiled model)."""
    return "".join(c if c in _COMMENT_SAFE else f"\\x{ord(c):02x}" if ord(c) < 256 else f"\\u{ord(c):04x}"
                   if ord(c) < 65536 else f"\\U{ord(c):08x}" for c in text)


def _expand_binding(bm: BatchModel, b: int, step: Any) -> list[str]:
    """The C function `expand_b`: binding b's spec error, its guards conjunct by conjunct, its
    successor's words and the kernel's flag, emitted into the batch's successors."""
    g, lay = bm.graph, bm.layout
    out = [f"HIDDEN void expand_{b}(struct search *S, const u64 *P) {{", "    u64 w[WORDS];",
           f"    do {{ /* {_comment(bm.model.bindings[b].label())} */"]
    c = _C(g, "        ", lay.fields)
    if step.error is not None:
        e = c.ref(step.error)
        out.extend(c.lines)
        c.lines = []
        out.append(f"        if ({e}) {{ emit(S, {b}, 1, 0, 0); break; }}")
    if step.guards is None:
        return out + ["    } while (0);", "}"]
    for cond in step.guards:
        v = c.ref(cond)
        out.extend(c.lines)
        c.lines = []
        out.append(f"        if (!({v})) break;")
    plan = WordWrites.of(g, lay, step.writes)
    pieces = C_FIELDS.pieces((f, c.ref(w), g.nodes[w].sort == BOOL) for f, w in plan.computed)
    flag = "0"
    if step.flag is not None and not (g.is_const(step.flag) and not g.cval(step.flag)):
        flag = c.ref(step.flag, as_bool=True)
    out.extend(c.lines)
    for wd in range(lay.words):
        expr = f"P[{wd}]"
        for op, x in plan.word(wd, pieces, lambda v: f"{v}ULL"):
            expr = f"({expr} {op} {x})"
        out.append(f"        w[{wd}] = {expr};")
    out.append(f"        emit(S, {b}, 0, w, {flag});")
    return out + ["    } while (0);", "}"]


def source(bm: BatchModel, canon: Any = None, parts: int | None = None) -> str:
    """The C source of a model: expand one state, check one state, and the search; with a
    Canonicaliser (ownership.engines.symmetry), under symmetry reduction. In `parts`
    translation units (NOTE(parts); None: as this machine's processors and the size suggest),
    each compiled with -DPART=k; the line `#define PARTS n` says how many."""
    g, lay, model = bm.graph, bm.layout, bm.model
    out = [_PRELUDE, f"#define WORDS {lay.words}", f"#define WIDTH {model.width}",
           f"#define BINDINGS {bm.n_bindings}", f"#define SOMETIMES {len(bm.state_roots.sometimes)}",
           f"#define SYMMETRY {0 if canon is None else 1}"]
    out.append("#if PART == 0")
    if canon is not None:
        out.extend(_canon_source(canon, lay))
    out.append("#endif")
    # expand: for each binding, in order, emit(S, b, error, words, flag) into the batch's
    # successors; a function a binding, dealt to the parts (NOTE(parts))
    out.append("struct search;")
    out.append("HIDDEN void emit(struct search *S, int b, int error, const u64 *w, int flag);")
    bodies = [(b, _expand_binding(bm, b, step)) for b, step in enumerate(bm.steps)
              if step is not None and not (step.guards is None and step.error is None)]
    n_parts = parts_for(sum(len(line) for _, body in bodies for line in body), parts)
    load = [0] * n_parts
    for _, body in sorted(bodies, key=lambda x: -sum(len(line) for line in x[1])):
        k = min(range(n_parts), key=load.__getitem__)
        load[k] += sum(len(line) for line in body)
        out.extend([f"#if PART == {k}", *body, "#endif"] if n_parts > 1 else body)
    out.extend(f"HIDDEN void expand_{b}(struct search *S, const u64 *P);" for b, _ in bodies)
    out.append(f"#define PARTS {n_parts}")
    out.append("#if PART == 0")
    out.append("static void expand(struct search *S, const u64 *P) {")
    out.extend(f"    expand_{b}(S, P);" for b, _ in bodies)
    out.append("}")
    # the state's properties: 1 a spec error, 2 bad; *some gets the sometimes that hold
    roots = bm.state_roots
    out.append("static int check_state(const u64 *P, u64 *some) {")
    c = _C(g, "    ", lay.fields)
    err = c.ref(roots.error)
    bad = c.ref(roots.bad)
    hits = [c.ref(s) for s in roots.sometimes]
    out.extend(c.lines)
    out.append(f"    if ({err}) return 1;")
    out.append(f"    if ({bad}) return 2;")
    out.append("    u64 got = 0;")
    for k, h in enumerate(hits):
        out.append(f"    if ({h}) got |= {1 << k}ULL;")
    out.append("    *some = got;")
    out.append("    return 0;")
    out.append("}")
    out.append(_SEARCH)
    out.append("#endif")
    return "\n".join(out) + "\n"


#: The search: the per-state engine's breadth-first order (ownership.engines.explicit), its
#: NOTE(first-event) rule and its counts, over packed states. Status codes: see STATUS.
_SEARCH = r"""
/* A successor of a parent of the batch: the words and hash of a step, or a spec error. */
struct succ { u64 w[WORDS]; u64 h; u64 stab; int32_t b; int8_t error; int8_t flag; };

struct search {
    u64 *states;          /* n x WORDS, in discovery order */
    int32_t *parent;      /* the state a state was first reached from (-1: the initial one) */
    /* (the binding that reached a state is not stored: ownership_via finds it again) */
    int64_t *level;       /* level[d]: the first state of depth d (states are stored by depth) */
    int64_t top;          /* the deepest depth stored */
    int64_t n, cap;       /* states stored (the visited set), room for */
    uint32_t *table;      /* open addressing: state id + 1, 0 empty */
    u64 tsize;            /* the table's slots: any number (NOTE(memory)); slot() maps a hash */
    u64 tgrow;            /* the table grows when this many states are stored */
    int64_t head, head_depth, transitions, deepest_done;
    int64_t max_states, max_depth;   /* -1: none */
    int64_t max_bytes;    /* what the store and the table may take (-1: no limit): NOTE(memory) */
    int64_t failed_depth, failed_at, failed_b;  /* a pending spec error (NOTE(first-event)) */
    int64_t event_at, event_b;       /* a violation: of the step (parent, binding), or of a state */
    u64 pending, reached;            /* sometimes properties not reached yet, reached */
    u64 represented;      /* under symmetry: the states the stored representatives stand for */
    u64 *last;            /* the successor that violated (WORDS) */
    struct succ *buf;     /* the successors of a batch of parents, in order */
    int64_t nbuf;
    int64_t *starts;      /* starts[k]: the first successor of the batch's k-th parent in buf */
};

/* Parents expanded ahead of the inserts, so that the visited table and the store can be
   fetched from memory ahead of use (NOTE(prefetch)); AHEAD successors ahead for the table,
   AHEAD / 2 for the stored state a table slot names. */
#define BATCH (BINDINGS >= 4096 ? 1 : (4096 / BINDINGS > 64 ? 64 : 4096 / BINDINGS))
#define AHEAD 16

static inline u64 mix(u64 h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
    return h;
}
static inline u64 hash_words(const u64 *w) {
    u64 h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < WORDS; i++) h = mix(h ^ (w[i] + 0x9e3779b97f4a7c15ULL * (u64)(i + 1)));
    return h;
}
/* NOTE(huge-pages): the table and the store are read at random; in 2 MiB pages (where the
   kernel has them, on request) a read rarely misses the TLB as well as the cache. The advice
   covers the whole pages of the block, its allocator's header included: advising only the
   pages inside it split the block's mapping in three, and the mremap that realloc grows a
   large block with failed (EFAULT), so every growth of the store copied it, old and new held
   at once (0.16 of --max-memory above the limit once the store grew by what fit, issue 29). */
static void advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095, hi = ((uintptr_t)p + bytes + 4095) & ~(uintptr_t)4095;
    if (bytes >= (1u << 21) && hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p; (void)bytes;
#endif
}
/* NOTE(memory): the bytes the store and the table hold: a state's words and parent per slot of
   the store, 4 bytes per slot of the table. A growth that would pass max_bytes (while a table
   grows, the old one and the new one are both held) is refused, and the search stops with
   what it found (status 7), before the process takes the memory. Near the limit the store
   grows by what still fits rather than doubling, and a table that cannot double fills up to
   TABLE_FULL of its slots (linear probing stays correct, only slower): doubling alone stopped
   the search at 0.79 of --max-memory 1G (issue 29). */
#define TABLE_FULL_TENTHS 9
static int64_t held_bytes(const struct search *S) {
    return S->cap * (int64_t)(WORDS * 8 + 4) + (int64_t)S->tsize * 4;
}
/* The store's arrays and the table are mapped by the search itself where the system can
   (Linux: mmap, mremap: a growth copies nothing, and nothing freed stays resident); elsewhere
   calloc and realloc. Through malloc the parents' array and the tables below the mmap
   threshold that the ownership command sets (NOTE(first-touch) in ownership.engines.memory)
   stayed resident once freed, never trimmed: 35 MB past the held bytes, 3% over
   --max-memory 300M (issue 29). Both ways the memory reads as zeros
   (a new mapping, calloc): the table needs it. */
static void *store_alloc(size_t bytes) {
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    void *p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? 0 : p;
#else
    return calloc(1, bytes);   /* (zeros, as a new mapping reads) */
#endif
}
static void *store_grow(void *p, size_t old, size_t bytes) {
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    void *q = mremap(p, old, bytes, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? 0 : q;
#else
    (void)old;
    return realloc(p, bytes);
#endif
}
static void store_free(void *p, size_t bytes) {
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    if (p) munmap(p, bytes);
#else
    (void)bytes;
    free(p);
#endif
}
/* A hash's slot in a table of `size` slots: the high half of hash * size (any size, not
   only a power of two, so that a table near the memory limit grows by what fits). */
static inline u64 slot(u64 hash, u64 size) { return (u64)(((unsigned __int128)hash * size) >> 64); }
static inline u64 next_slot(u64 h, u64 size) { return h + 1 == size ? 0 : h + 1; }
/* The table grows to twice its slots when half full; where that would pass max_bytes, to as
   many as fit while they keep it at most TABLE_FULL_TENTHS full (and then grows again only
   when it is that full); else it fails (7). */
static int grow_table(struct search *S) {
    u64 size = S->tsize * 2, least = (u64)S->n * 10 / TABLE_FULL_TENTHS + 1;
    if (S->max_bytes >= 0) {
        int64_t room = (S->max_bytes - held_bytes(S)) / 4;   /* (the old table is held while the new fills) */
        if ((int64_t)size > room) size = room > 0 ? (u64)room : 0;
        if (size < least || size <= S->tsize) return 7;
    }
    uint32_t *t = (uint32_t *)store_alloc(size * sizeof(uint32_t));
    if (!t) return 7;
    advise_huge(t, size * sizeof(uint32_t));
    u64 ring[16];   /* the slots of the next 16 states, fetched ahead (NOTE(prefetch)) */
    for (int64_t id = 0; id < S->n + 16; id++) {
        if (id >= 16) {   /* (the slot of state id - 16 first: state id's takes its place) */
            u64 h = ring[id & 15];
            while (t[h]) h = next_slot(h, size);
            t[h] = (uint32_t)(id - 16 + 1);
        }
        if (id < S->n) {
            u64 h = slot(hash_words(S->states + id * WORDS), size);
            __builtin_prefetch(&t[h], 1);
            ring[id & 15] = h;
        }
    }
    store_free(S->table, S->tsize * sizeof(uint32_t)); S->table = t;
    S->tgrow = size >= 2 * (u64)S->n ? size / 2 : size * TABLE_FULL_TENTHS / 10;
    S->tsize = size;
    return 0;
}
static int grow_states(struct search *S) {
    int64_t add = S->cap;
    if (S->max_bytes >= 0) {   /* (as many slots as fit, up to twice the store: NOTE(memory)) */
        int64_t room = (S->max_bytes - held_bytes(S)) / (int64_t)(WORDS * 8 + 4);
        if (room < add) add = room;
        if (add < 1024) return 7;
    }
    int64_t cap = S->cap + add;
    u64 *st = (u64 *)store_grow(S->states, (size_t)S->cap * WORDS * sizeof(u64), (size_t)cap * WORDS * sizeof(u64));
    if (!st) return 7;
    S->states = st;
    advise_huge(st, (size_t)cap * WORDS * sizeof(u64));
    int32_t *pa = (int32_t *)store_grow(S->parent, (size_t)S->cap * sizeof(int32_t), (size_t)cap * sizeof(int32_t));
    if (!pa) { S->states = (u64 *)store_grow(st, (size_t)cap * WORDS * sizeof(u64), (size_t)S->cap * WORDS * sizeof(u64)); return 7; }
    S->parent = pa;
    S->cap = cap;
    return 0;
}
static int64_t depth_of(const struct search *S, int64_t id) {
    int64_t lo = 0, hi = S->top;   /* the last depth whose first state is <= id */
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (S->level[mid] <= id) lo = mid; else hi = mid - 1;
    }
    return lo;
}
/* -1: stored already; else the new state's id (or -(rc+2) when memory ran out) */
static int64_t insert(struct search *S, const u64 *w, u64 hash, int64_t parent, int b, int64_t d) {
    u64 h = slot(hash, S->tsize);
    for (;;) {
        uint32_t e = S->table[h];
        if (!e) break;
        const u64 *s = S->states + (int64_t)(e - 1) * WORDS;
        int same = 1;
        for (int i = 0; i < WORDS; i++) same &= (s[i] == w[i]);
        if (same) return -1;
        h = next_slot(h, S->tsize);
    }
    if (S->n >= 2147483647LL) return -9;   /* (parents are kept in 31 bits) */
    if (S->n == S->cap && grow_states(S)) return -9;
    int64_t id = S->n++;
    memcpy(S->states + id * WORDS, w, WORDS * sizeof(u64));
    S->parent[id] = (int32_t)parent; (void)b;
    if (d > S->top) { S->top = d; S->level[d] = id; }
    S->table[h] = (uint32_t)(id + 1);
    if ((u64)S->n >= S->tgrow && grow_table(S)) {   /* NOTE(memory) */
        if ((u64)S->n * 10 >= S->tsize * TABLE_FULL_TENTHS) return -9;
        S->tgrow = S->tsize * TABLE_FULL_TENTHS / 10;   /* (no room to grow before it is that full) */
    }
    return id;
}
static void note_failed(struct search *S, int64_t d, int64_t at, int64_t b) {
    if (S->failed_depth < 0) { S->failed_depth = d; S->failed_at = at; S->failed_b = b; }
}
HIDDEN void emit(struct search *S, int b, int error, const u64 *w, int flag) {
    struct succ *e = &S->buf[S->nbuf++];
    e->b = b; e->error = (int8_t)error; e->flag = (int8_t)flag;
    if (error) return;
#if SYMMETRY
    e->stab = canon(w, e->w);   /* the representative is what the search stores and checks */
#else
    memcpy(e->w, w, WORDS * sizeof(u64));
#endif
    e->h = hash_words(e->w);
}
/* always_inline: gcc 12 judges a function of prefetches alone `const` and drops its calls */
static inline __attribute__((always_inline)) void prefetch(const struct search *S, int64_t i) {
    /* NOTE(prefetch): the table slot of a successor AHEAD ahead, and the stored state that the
       slot of one AHEAD / 2 ahead names (its slot was fetched AHEAD / 2 successors ago). Hints
       only: what is fetched never changes what the search does. */
    if (i + AHEAD < S->nbuf && !S->buf[i + AHEAD].error)
        __builtin_prefetch(&S->table[slot(S->buf[i + AHEAD].h, S->tsize)]);
    if (i + AHEAD / 2 < S->nbuf && !S->buf[i + AHEAD / 2].error) {
        u64 h = slot(S->buf[i + AHEAD / 2].h, S->tsize);
        uint32_t e = S->table[h];
        if (e) {
            __builtin_prefetch(S->states + (int64_t)(e - 1) * WORDS);
            e = S->table[next_slot(h, S->tsize)];   /* (and the next slot's, often probed too) */
            if (e) __builtin_prefetch(S->states + (int64_t)(e - 1) * WORDS);
        }
    }
}
/* One successor, exactly as the per-state engine takes it: 0 go on, else a status. */
static int on_step(struct search *S, int64_t cur, int64_t cur_depth, const struct succ *e) {
    int64_t d = cur_depth + 1;
    if (e->error) { note_failed(S, d, cur, e->b); return 0; }
    S->transitions++;
    if (e->flag) { S->event_at = cur; S->event_b = e->b; memcpy(S->last, e->w, WORDS * sizeof(u64)); return 2; }
    int64_t id = insert(S, e->w, e->h, cur, e->b, d);
    if (id == -1) return 0;
    if (id < -1) return 7;
#if SYMMETRY
    S->represented += ORDER / e->stab;
#endif
    u64 some = 0;
    int st = check_state(e->w, &some);
    if (st == 1) { note_failed(S, d, id, -1); return 0; }
    if (st == 2) { S->event_at = id; S->event_b = -1; return 3; }
    S->reached |= some & S->pending; S->pending &= ~some;
    if (S->max_states >= 0 && S->n >= S->max_states) return 4;
    return 0;
}

/* statuses: 0 time slice over (call again), 1 done (every state expanded), 2 a step violates,
   3 a state violates, 4 max-states, 5 max-depth, 6 a pending spec error ends the search,
   7 out of memory */
int ownership_run(struct search *S, int64_t budget) {
    int64_t until = S->head + budget;
    while (S->head < S->n) {
        /* expand a batch of parents first (that only fills buf), then take their successors in
           order, each parent's checks made when its turn comes, as if one at a time */
        int64_t first = S->head, last = first + BATCH;
        if (last > S->n) last = S->n;
        if (last > until) last = until > first ? until : first + 1;
        S->nbuf = 0;
        for (int64_t k = first; k < last; k++) {
            S->starts[k - first] = S->nbuf;
            expand(S, S->states + k * WORDS);
        }
        S->starts[last - first] = S->nbuf;
        for (int64_t i = 0; i < AHEAD && i < S->nbuf; i++)
            if (!S->buf[i].error) __builtin_prefetch(&S->table[slot(S->buf[i].h, S->tsize)]);
        for (int64_t idx = first; idx < last; idx++) {
            while (S->head_depth < S->top && idx >= S->level[S->head_depth + 1]) S->head_depth++;
            int64_t d = S->head_depth;
            if (S->failed_depth >= 0 && d >= S->failed_depth) return 6;
            if (S->head >= until) return 0;
            S->head++;
            if (d - 1 > S->deepest_done) S->deepest_done = d - 1;
            if (S->max_depth >= 0 && d >= S->max_depth) return 5;
            if (d >= 65535) return 7;   /* (bindings are kept in 16 bits; depths as deep) */
            for (int64_t i = S->starts[idx - first]; i < S->starts[idx - first + 1]; i++) {
                prefetch(S, i);
                int rc = on_step(S, idx, d, &S->buf[i]);
                if (rc) return rc;
            }
        }
    }
    return S->failed_depth >= 0 ? 6 : 1;
}
struct search *ownership_new(const u64 *initial, u64 pending, int64_t max_states, int64_t max_depth,
                             int64_t max_bytes) {
    struct search *S = (struct search *)calloc(1, sizeof(struct search));
    if (!S) return 0;
    S->cap = 1 << 12;
    S->states = (u64 *)store_alloc((size_t)S->cap * WORDS * sizeof(u64));
    S->parent = (int32_t *)store_alloc((size_t)S->cap * sizeof(int32_t));
    S->level = (int64_t *)calloc(65536, sizeof(int64_t));
    S->tsize = 1 << 13; S->tgrow = S->tsize / 2;
    S->table = (uint32_t *)store_alloc(S->tsize * sizeof(uint32_t));
    S->last = (u64 *)calloc(WORDS, sizeof(u64));
    S->buf = (struct succ *)malloc((size_t)BATCH * BINDINGS * sizeof(struct succ));
    S->starts = (int64_t *)malloc((size_t)(BATCH + 1) * sizeof(int64_t));
    if (!S->states || !S->parent || !S->level || !S->table || !S->last || !S->buf || !S->starts)
        return 0;
    S->max_states = max_states; S->max_depth = max_depth; S->max_bytes = max_bytes;
    S->failed_depth = -1; S->failed_at = -1; S->failed_b = -1; S->event_at = -1; S->event_b = -1;
    S->deepest_done = -1; S->pending = pending;
#if SYMMETRY
    u64 first[WORDS];
    S->represented = ORDER / canon(initial, first);
    insert(S, first, hash_words(first), -1, 0, 0);
#else
    insert(S, initial, hash_words(initial), -1, 0, 0);
#endif
    return S;
}
void ownership_free(struct search *S) {
    if (!S) return;
    store_free(S->states, (size_t)S->cap * WORDS * sizeof(u64));
    store_free(S->parent, (size_t)S->cap * sizeof(int32_t));
    store_free(S->table, S->tsize * sizeof(uint32_t));
    free(S->level); free(S->last);
    free(S->buf); free(S->starts); free(S);
}
int64_t ownership_get(struct search *S, int what) {
    switch (what) {
    case 0: return S->n; case 1: return S->transitions; case 2: return S->head;
    case 3: return S->deepest_done; case 4: return S->failed_depth; case 5: return S->failed_at;
    case 6: return S->failed_b; case 7: return S->event_at; case 8: return S->event_b;
    case 9: return (int64_t)S->reached; case 10: return S->top; case 12: return (int64_t)S->represented;
    case 11: return held_bytes(S);
    case 13: return S->n * (int64_t)(WORDS * 8 + 4) + (int64_t)S->tsize * 4;   /* NOTE(held-memory) */
    }
    return -1;
}
void ownership_state(struct search *S, int64_t id, u64 *out) {
    memcpy(out, id < 0 ? S->last : S->states + id * WORDS, WORDS * sizeof(u64));
}
int64_t ownership_parent(struct search *S, int64_t id) { return S->parent[id]; }
/* The binding that first reached state id: the first of its parent's bindings whose successor
   is the state (NOTE(first-event): the parent is the first state to reach it, and a parent's
   successors are taken in binding order), found by expanding the parent again: 2 bytes a
   state less to keep. -1 for the initial state. */
int64_t ownership_via(struct search *S, int64_t id) {
    int64_t parent = S->parent[id];
    if (parent < 0) return -1;
    struct succ *keep = S->buf; int64_t kept = S->nbuf;
    struct succ *mine = (struct succ *)malloc((size_t)BINDINGS * sizeof(struct succ));
    if (!mine) return -2;
    S->buf = mine; S->nbuf = 0;
    expand(S, S->states + parent * WORDS);
    int64_t found = -3;
    for (int64_t i = 0; i < S->nbuf && found < 0; i++) {
        if (mine[i].error || mine[i].flag) continue;
        if (memcmp(mine[i].w, S->states + id * WORDS, WORDS * sizeof(u64)) == 0) found = mine[i].b;
    }
    S->buf = keep; S->nbuf = kept; free(mine);
    return found;
}
int64_t ownership_depth(struct search *S, int64_t id) { return depth_of(S, id); }
#if SYMMETRY
u64 ownership_canon(const u64 *P, u64 *out) { return canon(P, out); }   /* (for the tests) */
#endif
"""


def compiler() -> str | None:
    """The C compiler this machine has ($CC, else cc or gcc), or None."""
    cc = os.environ.get("CC")
    if cc is not None and cc.strip():
        return cc if shutil.which(cc.split()[0]) else None
    return shutil.which("cc") or shutil.which("gcc")


def _no_compiler() -> UsageError:
    """The error for a machine without a C compiler, or a $CC that names no program."""
    cc = os.environ.get("CC")
    if cc:  # (issue 29: name what was set, and how to fix it)
        return UsageError(f"the native engine needs a C compiler: $CC is {shorten(cc, 160)!r}, not a program on PATH;"
                          " set CC to a C compiler (CC=gcc), or unset it to use cc, or leave --native out")
    return UsageError("the native engine needs a C compiler (cc, gcc, or $CC) on PATH: install one"
                      " (Debian: apt install gcc), or leave --native out")


# -- the cache of compiled models ------------------------------------------------------------
#
# NOTE(private-cache): a compiled model is code this process runs, so the folder it is loaded
# from must be one that nobody else can write (issue 29: the $TMPDIR fallback was used whatever
# its owner and mode, and a .so planted there under a model's digest was run). Every folder of
# the cache is made 0700, and one that is a symbolic link, not owned by the user, or writable
# by group or others is refused (exit 2), never used. Each library is recorded with the sha256
# of its content at build time and loaded only when that content is what is read (the file
# opened without following a link); a missing, empty, truncated or changed one is built again.

def _user() -> int:
    """The user the cache belongs to (the effective uid: the files are created as it)."""
    return os.geteuid()


class _Unwritable(Exception):
    """Raised (and caught here) when a cache folder cannot be made: the next place is tried."""


def _cache_dir() -> Path:
    """Where compiled models are kept: $XDG_CACHE_HOME/ownership/native (or ~/.cache/...), else
    $TMPDIR/ownership-native-<uid>; made 0700 and checked (NOTE(private-cache))."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        return _private_folder(Path(base), ("ownership", "native"))
    except _Unwritable:
        pass
    tmp = Path(tempfile.gettempdir())
    try:
        return _private_folder(tmp, (f"ownership-native-{_user()}",))
    except _Unwritable as e:
        raise UsageError(f"the native engine cannot make its cache folder in {shorten(base, 80)!r} nor in"
                         f" {shorten(str(tmp), 80)!r} ({e}): set XDG_CACHE_HOME to a folder you can write,"
                         " or leave --native out") from None


def _private_folder(base: Path, names: tuple[str, ...]) -> Path:
    """base/names..., each folder made 0700 where missing and checked (_check_private)."""
    try:
        os.makedirs(base, 0o700, exist_ok=True)  # (~/.cache itself may be missing)
    except OSError as e:
        raise _Unwritable(e.strerror or str(e)) from None
    _check_parent(base)
    path = base
    for name in names:
        path = path / name
        try:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)  # (mkdir's mode passes through the umask)
        except FileExistsError:
            pass
        except OSError as e:  # (not writable, read-only, not a folder: the next place)
            raise _Unwritable(e.strerror or str(e)) from None
        _check_private(path)
    if not os.access(path, os.W_OK | os.X_OK):
        raise _Unwritable(f"{path} is not writable")
    return path


def _refuse(path: Path, what: str) -> UsageError:
    """A cache folder that anyone but the user could have written to: exit 2, and the fix."""
    return UsageError(f"the native engine's cache folder {shorten(str(path), 100)!r} {what}: a library planted"
                      " there would run as your code; remove it, or set XDG_CACHE_HOME to a folder of your own")


def _check_private(path: Path) -> None:
    """Refuse a cache folder that is a symbolic link, not a folder, not the user's, or writable
    by group or others (NOTE(private-cache))."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, f"is a symbolic link (to {shorten(os.readlink(path), 60)!r})")
    if not stat.S_ISDIR(st.st_mode):
        raise _refuse(path, "is not a folder")
    if st.st_uid != _user():
        raise _refuse(path, f"is owned by uid {st.st_uid} (mode {stat.S_IMODE(st.st_mode):04o}), not by you"
                            f" (uid {_user()})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _refuse(path, f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})")


def _check_parent(base: Path) -> None:
    """Refuse a base folder that others may write without the sticky bit (as /tmp has it): they
    could rename the cache folder away and put theirs in its place."""
    st = os.stat(base)
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise _refuse(base, f"is writable by others without the sticky bit (mode {stat.S_IMODE(st.st_mode):04o})")


def _content_hash(fd: int) -> str:
    """The sha256 of a file's content, read from an open descriptor."""
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    return h.hexdigest()


def _recorded_hash(folder: Path, digest: str) -> str | None:
    """The content hash recorded beside a cached library at build time, or None."""
    try:
        fd = os.open(folder / f"{digest}.sha256", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        return os.read(fd, 200).decode("ascii", "replace").strip()
    finally:
        os.close(fd)


def _load_cached(folder: Path, digest: str) -> ctypes.CDLL | None:
    """The cached library of `digest` when its content is the one recorded at build time; None
    when it is missing or damaged (an empty .so failed to load, a truncated one was a SIGBUS:
    issue 29). Between the check and the load only the user can change it (NOTE(private-cache))."""
    want = _recorded_hash(folder, digest)
    if want is None:
        return None
    try:
        fd = os.open(folder / f"{digest}.so", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != _user() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        if _content_hash(fd) != want:
            return None
        try:
            # (by its path, not /proc/self/fd/N: the dynamic loader takes a name it has loaded
            # before for that library, and the fd's name is reused by every other model)
            return ctypes.CDLL(str(folder / f"{digest}.so"))
        except OSError:
            return None
    finally:
        os.close(fd)


def _store(folder: Path, digest: str, built: Path) -> None:
    """Put a library built in a temporary folder of `folder` in the cache under `digest`, its
    content hash beside it, each by an atomic rename (another process may be storing the same
    model: a library and a hash that do not match are built again, never loaded)."""
    recorded = built.with_suffix(".sha256")
    fd = os.open(built, os.O_RDONLY)
    try:
        recorded.write_text(_content_hash(fd) + "\n")
    finally:
        os.close(fd)
    os.replace(built, folder / f"{digest}.so")
    os.replace(recorded, folder / f"{digest}.sha256")


def _machine() -> str:
    """What the code is compiled for (-march=native): the machine and its CPU's features."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    return f"{platform.machine()} {hashlib.sha256(flags.encode()).hexdigest()[:12]}"


def cache_key(cc: str, text: str) -> str:
    """The name of a model's library in the cache: its source, the compiler and the machine."""
    return hashlib.sha256(f"{VERSION}\n{cc}\n{_machine()}\n{text}".encode()).hexdigest()[:24]


# -- compiling --------------------------------------------------------------------------------

class _CompilerFailed(Exception):
    """Raised (and caught here) when a compiler run fails: its first error line, or how it
    ended; `stderr` keeps what it said."""

    def __init__(self, summary: str, stderr: str = "") -> None:
        super().__init__(summary)
        self.stderr = stderr


def _run_compilers(jobs: list[list[str]]) -> None:
    """Run compiler commands at once; raise _CompilerFailed with the first failure's message."""
    # (each in a session of its own, so that a limit or Ctrl-C stops the compiler proper, cc1,
    # with the driver: killing the driver alone left cc1 running after the command had ended)
    runs = []
    try:
        for job in jobs:
            try:
                runs.append(subprocess.Popen(job, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                             errors="replace", start_new_session=True))
            except OSError as e:  # (not a program this system can run: issue 29)
                raise _CompilerFailed(f"it cannot be run: {e.strerror or e}") from None
        failed = [(run.returncode, err) for run in runs for _, err in [run.communicate()] if run.returncode != 0]
    finally:
        for run in runs:
            if run.poll() is None:
                try:
                    os.killpg(run.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                run.wait()
    if failed:
        code, err = failed[0]
        raise _CompilerFailed(_how_it_failed(code, err), err)


def _how_it_failed(code: int, err: str) -> str:
    """A compiler's failure in a few words: its first error line, else its exit status or signal."""
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    first = next((line for line in lines if "error" in line.lower()), lines[0] if lines else None)
    if first is not None:
        return f"its first error: {shorten(first, 160)}"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}, no message"
        except ValueError:
            return f"killed by signal {-code}, no message"
    return f"exit status {code}, no message"


#: A C file that any working compiler builds: a failure on it is the compiler's, not ownership's.
_PROBE = "int ownership_probe(int x) { return x + 1; }\n"


def _build(cc: str, text: str, tmp: Path) -> Path:
    """Compile the C source into tmp/model.so: its parts (NOTE(parts)) at once, then linked. A
    compiler that fails on a C file any compiler builds too is bad input (exit 2, issue 29);
    one that builds that but not the model's C is a bug of ownership (exit 4)."""
    c_file = tmp / "model.c"
    c_file.write_text(text)
    out = tmp / "model.so"
    n_parts = int(text[text.index("#define PARTS ") + 14:].split("\n", 1)[0])
    flags = [*cc.split(), *(_LARGE if len(text) > O1_BYTES else ["-O2"]), "-march=native", "-fPIC"]
    try:
        if n_parts == 1:
            _run_compilers([flags + ["-shared", "-o", str(out), str(c_file)]])
        else:
            _run_compilers([flags + [f"-DPART={k}", "-c", "-o", str(tmp / f"part{k}.o"), str(c_file)]
                            for k in range(n_parts)])
            _run_compilers([[*cc.split(), "-shared", "-o", str(out), *(str(tmp / f"part{k}.o") for k in range(n_parts))]])
    except _CompilerFailed as model_failed:
        _probe(cc, flags, tmp)
        from ..errors import InternalError

        raise InternalError(f"the native engine's C code does not compile (a bug of ownership): {model_failed}\n"
                            + model_failed.stderr[-2000:]) from None
    return out


def _probe(cc: str, flags: list[str], tmp: Path) -> None:
    """Raise the compiler's failure as bad input when it cannot build even a one-line library."""
    probe = tmp / "probe.c"
    probe.write_text(_PROBE)
    try:
        _run_compilers([flags + ["-shared", "-o", str(tmp / "probe.so"), str(probe)]])
    except _CompilerFailed as e:
        named = "$CC" if os.environ.get("CC") else "the C compiler"
        raise UsageError(f"the native engine cannot compile with {named} {shorten(cc, 160)!r} ({e}): set CC to a"
                         " working C compiler (CC=gcc), or unset it to use cc, or leave --native out") from None


def _compiled(cc: str, text: str) -> ctypes.CDLL:
    """The library of C source `text`: from the cache when its recorded content hash holds,
    else built into a temporary folder of the cache and stored by atomic renames
    (NOTE(private-cache))."""
    digest = cache_key(cc, text)
    where = _cache_dir()
    lib = _load_cached(where, digest)
    if lib is not None:
        return lib
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        _store(where, digest, _build(cc, text, Path(tmp)))
    lib = _load_cached(where, digest)
    if lib is None:  # (built and stored just now: a folder whose libraries cannot be mapped, noexec)
        try:
            ctypes.CDLL(str(where / f"{digest}.so"))
        except OSError as e:
            raise UsageError(f"the native engine cannot load the model it compiled into {shorten(str(where), 100)!r}"
                             f" ({shorten(str(e), 120)}): set XDG_CACHE_HOME to a folder on a file system that"
                             " allows running code, or leave --native out") from None
        raise UsageError(f"the native engine's compiled model in {shorten(str(where), 100)!r} changed as it was"
                         " stored (another process?): run the command again") from None
    return lib


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


__all__ = ["NativeModel", "compiler", "source"]
