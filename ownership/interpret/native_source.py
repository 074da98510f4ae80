"""The C source of a model for the native engine: its traced graphs and the search, as one C file.

The batch graph (ownership.ir.graph) is written as C by the walk of ownership.interpret.emit,
each operation from `_C.FORMS` (NOTE(emit-tables)): one function a binding that expands one
packed state (its spec error first, then its guard conjunct by conjunct, stopping at the first
that fails, then the successor's packed words and the kernel's flag), one that checks a state's
properties, under symmetry the canonical form of ownership.engines.symmetry, and around them
the fixed search of ownership.interpret.native_search. A large model's bindings are dealt to
several translation units (NOTE(parts)). ownership.interpret.native_build compiles the text.
"""

from __future__ import annotations

import os
from typing import Any

from ..ir.graph import Graph
from .batch import BOOL, BatchModel, WordWrites
from .emit import COMMON_FORMS, Emitter, FieldForm, Form
from .native_search import SEARCH

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
    out.append(SEARCH)
    out.append("#endif")
    return "\n".join(out) + "\n"

