"""The native interpreter: a Model's traced graphs, and the breadth-first search, compiled to C.

The batch interpreter (ownership.interpret.batch) hash-conses the traced actions into one
node table and runs it as numpy code over whole blocks; this module writes the same node
table as C, one function that expands one packed state (every binding in order: its spec
error first, then its guard conjunct by conjunct, stopping at the first that fails, then the
successor's packed words and the kernel's flag), and one that checks a state's properties.
Around them a fixed search in C (`_SEARCH` below) keeps the states in discovery order with
their parent and binding, and the visited set as an open-addressing table of state ids, so
that no Python runs per state: ownership.engines.native drives it a time slice at a time.

Semantics are the batch interpreter's, in int64, which are the concrete interpreter's on the
values the batch engine accepts (ownership.engines.batch.supports): + - * wrap as numpy does,
`//` and `%` floor (0 for a divisor of 0, as numpy gives; that step is a spec error anyway,
found by its error condition), shifts by a count outside 0..63 give what numpy gives, every
intermediate of an `If` is computed (no branch can trap). The numpy engine stays the
reference: tests/test_native.py compares states, verdicts and traces on every shipped spec.

The C file is compiled by the system's C compiler (`cc`, or $CC) into a shared library kept
in a cache directory by the hash of its source, and loaded with ctypes; docs/adr/0006 says
why C through ctypes rather than numba or cffi.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .batch import _CMP, BOOL, BatchModel, Graph, _Emitter

#: Bump when the generated code or the search template changes meaning (cache key).
VERSION = 1

_ARITH_C = {"add": "w_add", "sub": "w_sub", "mul": "w_mul"}
_BITS_C = {"bitand": "&", "bitor": "|", "bitxor": "^"}

_PRELUDE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef int64_t i64;
typedef uint64_t u64;
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


class _C(_Emitter):
    """C statements for a set of root nodes within one block, each node computed once (the
    batch interpreter's emitter, its order of nodes kept, writing C)."""

    def __init__(self, graph: Graph, indent: str, fields: list[Any]) -> None:
        super().__init__(graph, gathered=False)
        self.fields = fields   # (a state position is read straight from the packed words P)
        self.indent = indent

    def ref(self, n: int, *, as_int: bool = False, as_bool: bool = False) -> str:
        node = self.g.nodes[n]
        if node.op == "const":
            return _literal(node.value)
        self.need(n)
        return f"t{n}"

    def _line(self, n: int) -> str:
        return f"{self.indent}i64 t{n} = {self._expr(n)};"

    def _expr(self, n: int) -> str:
        g, node = self.g, self.g.nodes[n]
        op, a = node.op, node.args
        r = self.ref
        if op == "var":
            v = _field(self.fields[node.value])
            return f"({v} != 0)" if node.sort == BOOL else v
        if op in _CMP:
            return f"({r(a[0])} {_CMP[op]} {r(a[1])})"
        if op in _ARITH_C:
            return f"{_ARITH_C[op]}({r(a[0])}, {r(a[1])})"
        if op == "div":
            return f"f_div({r(a[0])}, {r(a[1])})"
        if op == "mod":
            return f"f_mod({r(a[0])}, {r(a[1])})"
        if op == "neg":
            return f"w_neg({r(a[0])})"
        if op == "shl":
            return f"f_shl({r(a[0])}, {r(a[1])})"
        if op == "shr":
            return f"f_shr({r(a[0])}, {r(a[1])})"
        if op == "and":
            return "(" + " & ".join(f"({r(x)} != 0)" for x in a) + ")"
        if op == "or":
            return "(" + " | ".join(f"({r(x)} != 0)" for x in a) + ")"
        if op == "xor":
            return f"(({r(a[0])} != 0) ^ ({r(a[1])} != 0))"
        if op == "not":
            return f"({r(a[0])} == 0)"
        if op in _BITS_C:
            return f"({r(a[0])} {_BITS_C[op]} {r(a[1])})"
        if op == "compl":
            return f"(~{r(a[0])})"
        if op == "ite":
            cond, yes, no = r(a[0]), r(a[1]), r(a[2])
            if node.sort == BOOL:
                yes, no = f"({yes} != 0)", f"({no} != 0)"
            return f"(({cond} != 0) ? {yes} : {no})"
        if op == "bit":
            return f"f_bit({r(a[0])})"
        if op == "popcount":
            return f"f_popcount({r(a[0])})"
        if op == "first":
            return f"f_first({r(a[0])}, {r(a[1])})"
        if op == "nth":
            return f"f_nth({r(a[0])}, {r(a[1])}, {_literal(a[2])})"
        if op == "select":
            stack, idx, default = a
            values = [r(v) for v in g.nodes[stack].args]
            i = r(idx)
            out = _literal(default)
            for k in range(len(values) - 1, -1, -1):
                out = f"(({i}) == {k} ? {values[k]} : {out})"
            return out
        if op == "stack":
            return "0"  # (only read through select, which takes its elements)
        raise UsageError(f"the native engine has no rule for the operation {op!r} yet: use the numpy engine")


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


def source(bm: BatchModel) -> str:
    """The C source of a model: expand one state, check one state, and the search."""
    g, lay, model = bm.graph, bm.layout, bm.model
    out = [_PRELUDE, f"#define WORDS {lay.words}", f"#define WIDTH {model.width}",
           f"#define BINDINGS {bm.n_bindings}", f"#define SOMETIMES {len(bm.state_roots.sometimes)}"]
    # expand: for each binding, in order, call on_step(ctx, b, error, words, flag)
    out.append("struct search;")
    out.append("static int on_step(struct search *S, int b, int error, const u64 *w, int flag);")
    out.append("static int expand(struct search *S, const u64 *P) {")
    out.append("    u64 w[WORDS]; int rc;")
    for b, step in enumerate(bm.steps):
        if step is None:
            continue
        if step.guards is None and step.error is None:
            continue
        out.append(f"    do {{ /* {model.bindings[b].label()} */")
        c = _C(g, "        ", lay.fields)
        if step.error is not None:
            e = c.ref(step.error)
            out.extend(c.lines)
            c.lines = []
            out.append(f"        if ({e}) {{ rc = on_step(S, {b}, 1, 0, 0); if (rc) return rc; break; }}")
        if step.guards is None:
            out.append("    } while (0);")
            continue
        for cond in step.guards:
            v = c.ref(cond)
            out.extend(c.lines)
            c.lines = []
            out.append(f"        if (!({v})) break;")
        clear: dict[int, int] = {}
        setc: dict[int, int] = {}
        pieces: dict[int, list[str]] = {}
        for i, node_id in step.writes:
            f = lay.fields[i]
            if f.bits == 0:
                continue
            mask = (1 << f.bits) - 1
            clear[f.word] = clear.get(f.word, 0) | (mask << f.shift)
            node = g.nodes[node_id]
            if node.op == "const":
                setc[f.word] = setc.get(f.word, 0) | (((int(node.value) - f.lo) & mask) << f.shift)
                continue
            v = c.ref(node_id)
            if node.sort == BOOL:
                v = f"({v} != 0)"
            piece = f"((u64)({v}" + (f" - {f.lo}LL" if f.lo else "") + f") & {mask}ULL)"
            pieces.setdefault(f.word, []).append(f"({piece} << {f.shift})" if f.shift else piece)
        flag = "0"
        if step.flag is not None and not (g.is_const(step.flag) and not g.cval(step.flag)):
            flag = f"({c.ref(step.flag)} != 0)"
        out.extend(c.lines)
        for wd in range(lay.words):
            expr = f"P[{wd}]"
            if wd in clear:
                expr = f"({expr} & {((1 << 64) - 1) ^ clear[wd]}ULL)"
            if setc.get(wd):
                expr = f"({expr} | {setc[wd]}ULL)"
            for piece in pieces.get(wd, []):
                expr = f"({expr} | {piece})"
            out.append(f"        w[{wd}] = {expr};")
        out.append(f"        rc = on_step(S, {b}, 0, w, {flag}); if (rc) return rc;")
        out.append("    } while (0);")
    out.append("    return 0;")
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
    return "\n".join(out) + "\n"


#: The search: the per-state engine's breadth-first order (ownership.engines.explicit), its
#: NOTE(first-event) rule and its counts, over packed states. Status codes: see STATUS.
_SEARCH = r"""
struct search {
    u64 *states;          /* n x WORDS, in discovery order */
    int32_t *parent;      /* the state a state was first reached from (-1: the initial one) */
    uint16_t *via;        /* the binding that reached it */
    uint16_t *depth;
    int64_t n, cap;       /* states stored (the visited set), room for */
    uint32_t *table;      /* open addressing: state id + 1, 0 empty */
    u64 tmask;            /* table size - 1 */
    int64_t head, transitions, deepest_done;
    int64_t max_states, max_depth;   /* -1: none */
    int64_t failed_depth, failed_at, failed_b;  /* a pending spec error (NOTE(first-event)) */
    int64_t event_at, event_b;       /* a violation: of the step (parent, binding), or of a state */
    u64 pending, reached;            /* sometimes properties not reached yet, reached */
    int64_t cur, cur_depth;
    u64 *last;            /* the successor that violated (WORDS) */
};

static inline u64 mix(u64 h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
    return h;
}
static inline u64 hash_words(const u64 *w) {
    u64 h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < WORDS; i++) h = mix(h ^ (w[i] + 0x9e3779b97f4a7c15ULL * (u64)(i + 1)));
    return h;
}
static int grow_table(struct search *S) {
    u64 size = (S->tmask + 1) * 2;
    uint32_t *t = (uint32_t *)calloc(size, sizeof(uint32_t));
    if (!t) return 7;
    for (int64_t id = 0; id < S->n; id++) {
        u64 h = hash_words(S->states + id * WORDS) & (size - 1);
        while (t[h]) h = (h + 1) & (size - 1);
        t[h] = (uint32_t)(id + 1);
    }
    free(S->table); S->table = t; S->tmask = size - 1;
    return 0;
}
static int grow_states(struct search *S) {
    int64_t cap = S->cap * 2;
    u64 *st = (u64 *)realloc(S->states, (size_t)cap * WORDS * sizeof(u64));
    if (!st) return 7;
    S->states = st;
    int32_t *pa = (int32_t *)realloc(S->parent, (size_t)cap * sizeof(int32_t));
    if (!pa) return 7;
    S->parent = pa;
    uint16_t *vi = (uint16_t *)realloc(S->via, (size_t)cap * sizeof(uint16_t));
    if (!vi) return 7;
    S->via = vi;
    uint16_t *de = (uint16_t *)realloc(S->depth, (size_t)cap * sizeof(uint16_t));
    if (!de) return 7;
    S->depth = de;
    S->cap = cap;
    return 0;
}
/* -1: stored already; else the new state's id (or -(rc+2) when memory ran out) */
static int64_t insert(struct search *S, const u64 *w, int64_t parent, int b, int64_t d) {
    u64 h = hash_words(w) & S->tmask;
    for (;;) {
        uint32_t e = S->table[h];
        if (!e) break;
        const u64 *s = S->states + (int64_t)(e - 1) * WORDS;
        int same = 1;
        for (int i = 0; i < WORDS; i++) same &= (s[i] == w[i]);
        if (same) return -1;
        h = (h + 1) & S->tmask;
    }
    if (S->n >= 2147483647LL) return -9;   /* (parents are kept in 31 bits) */
    if (S->n == S->cap && grow_states(S)) return -9;
    int64_t id = S->n++;
    memcpy(S->states + id * WORDS, w, WORDS * sizeof(u64));
    S->parent[id] = (int32_t)parent; S->via[id] = (uint16_t)b; S->depth[id] = (uint16_t)d;
    S->table[h] = (uint32_t)(id + 1);
    if ((u64)S->n * 2 > S->tmask + 1 && grow_table(S)) return -9;
    return id;
}
static void note_failed(struct search *S, int64_t d, int64_t at, int64_t b) {
    if (S->failed_depth < 0) { S->failed_depth = d; S->failed_at = at; S->failed_b = b; }
}
static int on_step(struct search *S, int b, int error, const u64 *w, int flag) {
    int64_t d = S->cur_depth + 1;
    if (error) { note_failed(S, d, S->cur, b); return 0; }
    S->transitions++;
    if (flag) { S->event_at = S->cur; S->event_b = b; memcpy(S->last, w, WORDS * sizeof(u64)); return 2; }
    int64_t id = insert(S, w, S->cur, b, d);
    if (id == -1) return 0;
    if (id < -1) return 7;
    u64 some = 0;
    int st = check_state(w, &some);
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
        int64_t idx = S->head;
        int64_t d = S->depth[idx];
        if (S->failed_depth >= 0 && d >= S->failed_depth) return 6;
        if (S->head >= until) return 0;
        S->head++;
        if (d - 1 > S->deepest_done) S->deepest_done = d - 1;
        if (S->max_depth >= 0 && d >= S->max_depth) return 5;
        S->cur = idx; S->cur_depth = d;
        if (d >= 65535) return 7;   /* (depths are kept in 16 bits) */
        u64 P[WORDS];   /* (a copy: the store may move while the successors are inserted) */
        memcpy(P, S->states + idx * WORDS, WORDS * sizeof(u64));
        int rc = expand(S, P);
        if (rc) return rc;
    }
    return S->failed_depth >= 0 ? 6 : 1;
}
struct search *ownership_new(const u64 *initial, u64 pending, int64_t max_states, int64_t max_depth) {
    struct search *S = (struct search *)calloc(1, sizeof(struct search));
    if (!S) return 0;
    S->cap = 1 << 12;
    S->states = (u64 *)malloc((size_t)S->cap * WORDS * sizeof(u64));
    S->parent = (int32_t *)malloc((size_t)S->cap * sizeof(int32_t));
    S->via = (uint16_t *)malloc((size_t)S->cap * sizeof(uint16_t));
    S->depth = (uint16_t *)malloc((size_t)S->cap * sizeof(uint16_t));
    S->tmask = (1 << 13) - 1;
    S->table = (uint32_t *)calloc(S->tmask + 1, sizeof(uint32_t));
    S->last = (u64 *)calloc(WORDS, sizeof(u64));
    if (!S->states || !S->parent || !S->via || !S->depth || !S->table || !S->last) return 0;
    S->max_states = max_states; S->max_depth = max_depth;
    S->failed_depth = -1; S->failed_at = -1; S->failed_b = -1; S->event_at = -1; S->event_b = -1;
    S->deepest_done = -1; S->pending = pending;
    insert(S, initial, -1, 0, 0);
    return S;
}
void ownership_free(struct search *S) {
    if (!S) return;
    free(S->states); free(S->parent); free(S->via); free(S->depth); free(S->table); free(S->last); free(S);
}
int64_t ownership_get(struct search *S, int what) {
    switch (what) {
    case 0: return S->n; case 1: return S->transitions; case 2: return S->head;
    case 3: return S->deepest_done; case 4: return S->failed_depth; case 5: return S->failed_at;
    case 6: return S->failed_b; case 7: return S->event_at; case 8: return S->event_b;
    case 9: return (int64_t)S->reached; case 10: return S->n ? S->depth[S->n - 1] : 0;
    case 11: return (int64_t)((S->cap * (WORDS * 8 + 8)) + (int64_t)(S->tmask + 1) * 4);
    }
    return -1;
}
void ownership_state(struct search *S, int64_t id, u64 *out) {
    memcpy(out, id < 0 ? S->last : S->states + id * WORDS, WORDS * sizeof(u64));
}
int64_t ownership_parent(struct search *S, int64_t id) { return S->parent[id]; }
int64_t ownership_via(struct search *S, int64_t id) { return S->via[id]; }
int64_t ownership_depth(struct search *S, int64_t id) { return S->depth[id]; }
"""


def compiler() -> str | None:
    """The C compiler this machine has ($CC, else cc or gcc), or None."""
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc.split()[0]) and cc
    return shutil.which("cc") or shutil.which("gcc")


def _cache_dir() -> Path:
    """Where compiled models are kept ($XDG_CACHE_HOME or ~/.cache, else a temporary folder)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    where = Path(base) / "ownership" / "native"
    try:
        where.mkdir(parents=True, exist_ok=True)
        if os.access(where, os.W_OK):
            return where
    except OSError:
        pass
    return Path(tempfile.gettempdir()) / f"ownership-native-{os.getuid() if hasattr(os, 'getuid') else 0}"


def _machine() -> str:
    """What the code is compiled for (-march=native): the machine and its CPU's features."""
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        pass
    return f"{platform.machine()} {hashlib.sha256(flags.encode()).hexdigest()[:12]}"


class NativeModel:
    """A model's search compiled to a shared library (see the module docstring)."""

    def __init__(self, bm: BatchModel) -> None:
        self.bm = bm
        if bm.n_bindings > 65535:
            raise UsageError("the native engine takes at most 65,535 action bindings; use the numpy engine")
        cc = compiler()
        if cc is None:
            raise UsageError("the native engine needs a C compiler (cc, gcc, or $CC) on PATH: install one"
                             " (Debian: apt install gcc), or leave --native out")
        text = source(bm)
        digest = hashlib.sha256(f"{VERSION}\n{cc}\n{_machine()}\n{text}".encode()).hexdigest()[:24]
        where = _cache_dir()
        lib = where / f"{digest}.so"
        if not lib.exists():
            where.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=where) as tmp:
                c_file = Path(tmp) / "model.c"
                c_file.write_text(text)
                out = Path(tmp) / "model.so"
                run = subprocess.run([*cc.split(), "-O2", "-march=native", "-shared", "-fPIC", "-o", str(out), str(c_file)],
                                     capture_output=True, text=True)
                if run.returncode != 0:
                    from ..errors import InternalError

                    raise InternalError("the native engine's C code does not compile (a bug of ownership):\n"
                                        + run.stderr[-2000:])
                os.replace(out, lib)  # (atomic: another process may be compiling the same model)
        self.lib = ctypes.CDLL(str(lib))
        L = self.lib
        L.ownership_new.restype = ctypes.c_void_p
        L.ownership_new.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64]
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


__all__ = ["NativeModel", "compiler", "source"]
