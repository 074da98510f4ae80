"""The batch interpreter: runs a Model's traced actions over a whole BFS frontier at once.

A frontier is a block of states, one row per state. States travel *packed*: every position of
the flat state becomes a bit field (value minus its slot's lower bound) in 64-bit words, so a
row is a handful of uint64 words (`Layout`, ownership.interpret.packing). For evaluation a
block is *unpacked* into one int64 column per state position.

The action graphs come from the symbolic interpreter (`trace_model`), with the kernel's
operations already unrolled over pages. They are compiled once per model:
- hash-consed into the batch graph (ownership.ir.graph: one shared node table, so a
  subexpression used by several bindings (or pages) is one node, folded where its arguments
  are constants or its interval decides it, e.g. `prompt > 3` when prompt ranges over 0..3);
- emitted as straight-line numpy code (the walk of ownership.interpret.emit, each operation
  written from `_Emitter.FORMS`: NOTE(emit-tables)), one Python function per program: guards
  become boolean masks, `ite` becomes `np.where`, page-set primitives (`popcount`, `first`,
  `nth`, `select`) are vectorised helpers (ownership.interpret.batch_runtime). Every
  intermediate is computed once per call (the CSE of the node table is the cache per term
  within one evaluation).

The hot path has no per-state Python loop: per block it runs one function for the cheap parts of
every guard (stage comparisons) over all rows, then per binding a function over only the rows
where that binding is enabled, which writes the successor's packed words directly and returns
whether a kernel property was flagged and whether a write left its slot's domain (a spec error,
re-run concretely to get the concrete interpreter's message).

Semantics are those of ownership.interpret.concrete on Python integers, in int64
(NOTE(int64-exact)): a model runs here only where every value fits. A page set of a pool of
at most 62 pages is one non-negative int64 column; a larger pool's page sets are limbs of 63
bits (NOTE(wide-pages); ownership.engines.batch refuses pools over MAX_WIDE_POOL_PAGES, and the
per-state engine checks them); every slot's domain, every constant and
every intermediate that interval analysis cannot bound inside int64 makes the model
`unsupported`, and it is checked with Python's integers instead. (A 64-page pool was once
let in, its page 63 held as a negative int64: exact inside the kernel's operations, but a
state read back from a packed row held a negative page set, on which the concrete
interpreter then judged counterexamples and liveness wrongly.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.graph import COMPARISONS, INT64_MAX, INT64_MIN, Graph, Node
from ..ir.tracer import BOOL, INT, trace_model
from ..lang.model import Model
from ..lang.values import PYTHON
from .batch_runtime import _TABLE_BITS, _compile, _words
from .batch_runtime import _first_bytes as _first_bytes  # (re-exported: the tests read them here)
from .batch_runtime import _nth_bytes as _nth_bytes
from .emit import COMMON_FORMS, Emitter, FieldForm, Form
from .packing import Field, Layout

#: Largest pool the batch engine takes, in limbs of 63 pages (ownership.engines.batch.supports).
MAX_WIDE_POOL_PAGES = 1024


# --------------------------------------------------------------------------- code generation


def _literal(v: Any) -> str:
    """A constant as it appears in generated code, in int64's two's complement."""
    if isinstance(v, bool):
        return repr(v)
    v = int(v)
    if v > INT64_MAX:
        v -= 1 << 64
    return repr(v)


#: How a field's value goes into a packed word, in numpy (ownership.interpret.emit.FieldForm).
NUMPY_FIELDS = FieldForm(word="{v}.view(np.uint64)", offset="({v} - {lo})", condition="{v}.astype(np.uint64)",
                         mask="({v} & {mask})")


class _Emitter(Emitter):
    """Straight-line numpy code over a block's rows (`gathered`: the rows idx of X only)."""

    BACKEND = "numpy"

    def __init__(self, graph: Graph, *, gathered: bool) -> None:
        super().__init__(graph)
        self.gathered = gathered
        self.tables: dict[str, np.ndarray] = {}  # lookup tables the code reads (built once)

    def table(self, values: list[int]) -> str:
        """The name of a constant int64 lookup table in the generated code's namespace."""
        name = f"_T{len(self.tables)}"
        if any(not INT64_MIN <= v <= INT64_MAX for v in values):
            # (NOTE(int64-exact): the model will be unsupported and this code never run)
            self.g.too_wide = self.g.too_wide or f"a value of {min(values)}..{max(values)}"
            values = [min(max(v, INT64_MIN), INT64_MAX) for v in values]
        self.tables[name] = np.array(values, dtype=np.int64)
        return name

    def literal(self, v: Any, *, as_int: bool = False, as_bool: bool = False) -> str:
        if as_int:
            return _literal(int(v))
        if as_bool:
            return repr(bool(v))
        return _literal(v)

    def coerce(self, name: str, sort: str, *, as_int: bool, as_bool: bool) -> str:
        if as_int and sort == BOOL:
            return f"{name}.astype(np.int64)"
        if as_bool and sort == INT:
            return f"({name} != 0)"
        return name

    def column(self, position: int) -> str:
        return f"X[{position}].take(idx)" if self.gathered else f"X[{position}]"

    def _line(self, n: int) -> str:
        return f"    t{n} = {self._expr(n)}"

    def stack(self, node: Node) -> str:
        return "_stack((" + "".join(self.ref(v, as_int=True) + ", " for v in node.args) + "), N)"

    # -- the operations numpy writes in more than one way (NOTE(emit-tables)) ---------------

    def _bit(self, n: int) -> str:
        """page(p): a shift, guarded where p may be negative (no page)."""
        a = self.g.nodes[n].args
        p = self.ref(a[0], as_int=True)
        if self.g.nodes[a[0]].lo >= 0:
            return f"np.left_shift(1, {p})"
        return f"np.where({p} >= 0, np.left_shift(1, np.maximum({p}, 0)), 0)"

    def _bytewise(self, m: int) -> bool:
        """A page set of more than 10 pages, or a limb of a wide one (NOTE(wide-pages)): byte
        tables, not a loop over its bits (a 62-page pool ran at half the speed of 63)."""
        return self.g.bit_width(m) > _TABLE_BITS and self.g.nodes[m].lo >= 0 and np.little_endian

    def _first(self, n: int) -> str:
        """first(m, k): byte tables, one table over every small m, or a loop over m's bits."""
        m, k = self.g.nodes[n].args
        if self._bytewise(m):
            return f"_first_bytes({self.ref(m, as_int=True)}, {self.ref(k, as_int=True)})"
        return f"_first({self.ref(m, as_int=True)}, {self.ref(k, as_int=True)}, {self.g.bit_width(m)})"

    def _nth(self, n: int) -> str:
        """nth(m, j, default): byte tables, a table of nth(., j) at a constant j, or a loop."""
        g = self.g
        m, j, default = g.nodes[n].args
        if self._bytewise(m):
            return f"_nth_bytes({self.ref(m, as_int=True)}, {self.ref(j, as_int=True)}, {_literal(default)})"
        if g.is_const(j) and g.bit_width(m) <= _TABLE_BITS:
            # a constant j (the kernel's unrolled loops): one gather from a table of nth(m, j)
            # over every m the page set can hold (0 <= m < 2**bits), instead of _nth's ~8 ops
            values = [PYTHON.nth(x, int(g.cval(j)), default) for x in range(1 << g.bit_width(m))]
            return f"{self.table(values)}.take({self.ref(m, as_int=True)})"
        return f"_nth({self.ref(m, as_int=True)}, {self.ref(j, as_int=True)}, {_literal(default)}, {g.bit_width(m)})"

    def _select(self, n: int) -> str:
        """values[idx]: a gather from a table of constant values, else from the stacked rows."""
        node = self.g.nodes[n]
        stack, idx, default = node.args
        constants = self.constant_values(node)
        if constants is None:
            return f"_select({self.ref(stack)}, {self.ref(idx, as_int=True)}, {_literal(default)})"
        values = [int(v) for v in constants]
        inode = self.g.nodes[idx]
        if 0 <= inode.lo and inode.hi < len(values):  # always in range: a plain gather
            return f"{self.table(values)}.take({self.ref(idx, as_int=True)})"
        return f"_select_const({self.table(values + [default])}, {self.ref(idx, as_int=True)})"

    #: NOTE(emit-tables): how numpy writes each operation
    FORMS = {
        **COMMON_FORMS,
        "add": Form("({0} + {1})", "int"),
        "sub": Form("({0} - {1})", "int"),
        "mul": Form("({0} * {1})", "int"),
        "div": Form("np.floor_divide({0}, {1})", "int"),
        "mod": Form("np.remainder({0}, {1})", "int"),
        "neg": Form("(-{0})", "int"),
        "shl": Form("np.left_shift({0}, {1})", "int"),
        "shr": Form("np.right_shift({0}, {1})", "int"),
        "not": Form("(~{0})", "bool"),
        "ite": Form("np.where({0}, {1}, {2})", ("bool", "sort", "sort")),
        "bit": _bit,
        "popcount": Form("_popcount({0})", "int"),
        "first": _first,
        "nth": _nth,
        "select": _select,
    }


# --------------------------------------------------------------------------- compiled model


@dataclass
class Program:
    """One action binding compiled: `rest` (guards not in the shared first stage), `body`, and
    `errors` (where the binding raises a spec error; None when it never can)."""

    binding: int
    rest: Callable[..., Any] | None
    body: Callable[..., Any] | None   # None: never enabled
    errors: Callable[..., Any] | None = None


@dataclass
class Expansion:
    """The successors of a block of states: one entry per enabled (state, binding) pair that
    raises no spec error, grouped by binding in model order, rows ascending within a binding;
    and the (state, binding) pairs that raise a spec error (`error_rows`, `error_binding`)."""

    rows: np.ndarray       # int64: the row of the parent in the block
    binding: np.ndarray    # int64: index into model.bindings
    words: np.ndarray      # uint64 (words x m): the packed successor
    flagged: np.ndarray    # bool: a kernel property is violated by this transition
    error_rows: np.ndarray     # int64: rows where a binding raises a spec error
    error_binding: np.ndarray  # int64: which binding


@dataclass
class StepPlan:
    """One binding's graph: its guard's conjuncts (None: never enabled), the writes (state
    position, node), the kernel's flag, and where it raises a spec error (None: never)."""

    guards: list[int] | None
    writes: list[tuple[int, int]]
    flag: int | None
    error: int | None


@dataclass
class WordWrites:
    """How a successor's packed words are made from its parent's (the numpy and the C writers
    both follow it): per word, the bits of the written fields (cleared), the bits of constant
    values (set), and the fields whose value a node computes, in the order of the writes."""

    cleared: dict[int, int]
    constant: dict[int, int]
    computed: list[tuple[Field, int]]

    @staticmethod
    def of(graph: Graph, layout: Layout, writes: list[tuple[int, int]]) -> WordWrites:
        cleared: dict[int, int] = {}
        constant: dict[int, int] = {}
        computed: list[tuple[Field, int]] = []
        for i, node_id in writes:
            f = layout.fields[i]
            if f.bits == 0:
                continue
            mask = (1 << f.bits) - 1
            cleared[f.word] = cleared.get(f.word, 0) | (mask << f.shift)
            node = graph.nodes[node_id]
            if node.op == "const":
                constant[f.word] = constant.get(f.word, 0) | (((int(node.value) - f.lo) & mask) << f.shift)
            else:
                computed.append((f, node_id))
        return WordWrites(cleared, constant, computed)

    def word(self, word: int, pieces: dict[int, list[str]], number: Callable[[int], str]) -> list[tuple[str, str]]:
        """The steps that make a successor's word from its parent's, (operator, operand): keep
        (&) the bits not written, set (|) the constant ones, then each computed field's piece;
        `number` writes a constant in the backend's code."""
        steps = [] if word not in self.cleared else [("&", number(((1 << 64) - 1) ^ self.cleared[word]))]
        if self.constant.get(word):
            steps.append(("|", number(self.constant[word])))
        return steps + [("|", piece) for piece in pieces.get(word, [])]


@dataclass
class StateRoots:
    """The state properties' graph roots (ownership.interpret.batch.BatchModel.state_roots)."""

    bad: int
    error: int
    sometimes: list[int]


@dataclass
class StateChecks:
    """The state properties of a block's rows: `bad` (an invariant or the leak property fails,
    in a row that raises no spec error), `sometimes` (per sometimes property, where it holds),
    `error` (a property raises a spec error in the row; None when none can)."""

    bad: np.ndarray
    sometimes: list[np.ndarray]
    error: np.ndarray | None


class BatchModel:
    """A Model's traced graphs compiled to numpy code (see the module docstring)."""

    def __init__(self, model: Model, *, reachable: bool = False) -> None:
        """`reachable`: the model will only be run on states reachable from its initial state
        (a search), so positions that no binding writes are packed in no bits
        (NOTE(constant-positions)); without it, every in-domain state packs."""
        self.model = model
        self.layout = Layout(model)
        traced = trace_model(model)
        g = self.graph = Graph(model)
        self.n_bindings = len(model.bindings)
        #: per binding, its graph roots (None: never enabled), for other back ends (ownership.interpret.native)
        self.steps: list[StepPlan | None] = [None] * self.n_bindings
        cheap_roots: list[int | None] = []
        before_error_roots: list[int | None] = []
        plans: list[tuple[int, int | None, list[tuple[int, int]], int | None, int | None]] = []
        for b, tr in enumerate(traced.actions):
            conj = self._conjuncts(tr.guard)
            error_root, ahead = self._error_root(tr)
            ahead_cheap = [c for c in self._conjuncts(ahead) if not g.is_const(c) and self._cheap(c)]
            before_error_roots.append(None if error_root is None else
                                      (g.mk("and", tuple(ahead_cheap), BOOL) if ahead_cheap else -1))
            if any(g.is_const(c) and not g.cval(c) for c in conj):
                cheap_roots.append(None)   # never enabled (it may still raise a spec error)
                plans.append((b, None, [], None, error_root))
                self.steps[b] = StepPlan(None, [], None, error_root)
                continue
            conj = [c for c in conj if not g.is_const(c)]
            cheap = [c for c in conj if self._cheap(c)]
            rest = [c for c in conj if c not in cheap]
            cheap_roots.append(g.mk("and", tuple(cheap), BOOL) if cheap else -1)
            writes = [cw for i, w in sorted(tr.writes.items()) for cw in g.write_nodes(i, w)]
            writes = [(i, w) for i, w in writes if not (g.nodes[w].op == "var" and g.nodes[w].value == i)]
            checked = [c for prop, c, _ in tr.flags if prop not in self.model.skip]  # --skip
            flag = g.mk("or", tuple(g.term(c) for c in checked), BOOL) if checked else g.const(False)
            plans.append((b, g.mk("and", tuple(rest), BOOL) if rest else None, writes, flag, error_root))
            self.steps[b] = StepPlan(cheap + rest, writes, flag, error_root)
        self.never = [r is None for r in cheap_roots]
        # NOTE(constant-positions): a position that no binding writes keeps its initial value in
        # every reachable state (a state is reached only by steps), so a search packs it in no
        # bits: the kernel's in-flight marks of a pool that nothing sends into, say. This is a
        # fact of the traced writes, not a guess: a write of any other value makes the position
        # a field. Only for searches (`reachable`): the step of an arbitrary in-domain state,
        # which tests compare with the concrete one, needs every position's own bits.
        if reachable:
            # (by column: a wide page set's limbs each; NOTE(wide-pages))
            written = {i for _, _, writes, _, _ in plans for i, _ in writes}
            self.layout = Layout(model, {i: v for i, v in enumerate(self.layout.split(model.initial))
                                         if i not in written})
        props = traced.properties
        self.state_roots = self._prop_roots(props)
        self.state_can_fail = any(not (g.is_const(n) and not g.cval(n)) for n in
                                  (g.term(e.cond) for e in props.errors))
        self.can_fail = any(error_root is not None for *_, error_root in plans)
        # NOTE(lazy-numpy): the numpy programs are compiled on first use: the native engine
        # (ownership.interpret.native) reads only the graph, the steps and the state roots, and
        # compiling Python source for a model with thousands of nodes a binding (pools of
        # hundreds of pages) took longer than the search.
        self._pending: tuple[Any, ...] | None = (cheap_roots + before_error_roots, plans, props)
        self.sometimes_names = [name for name, _ in props.sometimes]
        #: why this model cannot run here (an integer that may not fit 64 bits), or None
        self.unsupported: str | None = None
        if g.too_wide is not None:
            wide = g.too_wide if isinstance(g.too_wide, str) else repr(g.too_wide)
            self.unsupported = ("a value of the spec may not fit a 64-bit integer (" + wide[:120]
                                + "), which the batch engine computes in")

    # -- compilation ------------------------------------------------------------------------

    def _compile_numpy(self) -> None:
        """The numpy programs of the steps and the state properties (NOTE(lazy-numpy))."""
        if self._pending is None:
            return
        stage1_roots, plans, props = self._pending
        self._stage1 = self._compile_stage1(stage1_roots)
        self.programs: list[Program | None] = []
        for b, rest_root, writes, flag_root, error_root in plans:
            errors_fn = self._compile_rest(b, error_root) if error_root is not None else None
            if self.never[b] or flag_root is None:
                self.programs.append(None if errors_fn is None else Program(b, None, None, errors_fn))
                continue
            rest_fn = self._compile_rest(b, rest_root) if rest_root is not None else None
            self.programs.append(Program(b, rest_fn, self._compile_body(b, writes, flag_root), errors_fn))
        self._props = self._compile_props(props)
        self._props_only = self._compile_props(props, sometimes=False)
        self._pending = None

    def _conjuncts(self, conds: list[Any]) -> list[int]:
        g = self.graph
        conj: list[int] = []
        for cond in conds:
            c = g.term(cond)
            node = g.nodes[c]
            conj.extend(node.args if node.op == "and" else [c])
        return conj

    def _error_root(self, tr: Any) -> tuple[int | None, list[Any]]:
        """Where the binding raises a spec error: some error whose guards before it hold and
        whose own condition holds (None when no error can happen); and the guards before the
        first possible error."""
        g = self.graph
        parts = []
        ahead: list[Any] | None = None
        for before, cond, _ in tr.errors():
            c = g.term(cond)
            if g.is_const(c) and not g.cval(c):
                continue
            guard = self._conjuncts(before)
            if any(g.is_const(x) and not g.cval(x) for x in guard):
                continue
            if ahead is None:
                ahead = before
            parts.append(g.mk("and", tuple(guard) + (c,), BOOL))
        if not parts:
            return None, []
        root = g.mk("or", tuple(parts), BOOL)
        if g.is_const(root) and not g.cval(root):
            return None, []
        return root, ahead or []

    def _cheap(self, root: int) -> bool:
        """A guard conjunct made only of comparisons of slots with constants (a stage check)."""
        g = self.graph
        stack, seen = [root], set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            node = g.nodes[n]
            if node.op in ("var", "const"):
                continue
            if node.op not in COMPARISONS and node.op not in ("and", "or", "not"):
                return False
            stack.extend(node.args)
        return len(seen) <= 12

    def _compile_stage1(self, roots: list[int | None]) -> Callable[[np.ndarray], list[Any]]:
        em = _Emitter(self.graph, gathered=False)
        outs = []
        for r in roots:
            if r is None:
                outs.append("False")
            elif r == -1:
                outs.append("None")
            else:
                outs.append(em.ref(r, as_bool=True))
        src = "def stage1(X):\n    N = X.shape[1]\n" + "\n".join(em.lines) + f"\n    return [{', '.join(outs)}]\n"
        return _compile(src, "stage1", em.tables)

    def _compile_rest(self, b: int, root: int) -> Callable[..., Any]:
        em = _Emitter(self.graph, gathered=True)
        out = em.ref(root, as_bool=True)
        src = "def rest(X, idx):\n    N = idx.shape[0]\n" + "\n".join(em.lines) + f"\n    return {out}\n"
        return _compile(src, "rest", em.tables)

    def _compile_body(self, b: int, writes: list[tuple[int, int]], flag: int) -> Callable[..., Any]:
        """The successor's packed words and the kernel's flag, for rows where the binding is
        enabled. A value outside its slot's domain is a spec error found by the `errors`
        program (ownership.lang.state checks every write), so here every value fits its field."""
        g, lay = self.graph, self.layout
        em = _Emitter(g, gathered=True)
        plan = WordWrites.of(g, lay, writes)
        per_word = NUMPY_FIELDS.pieces((f, em.ref(w), g.nodes[w].sort == BOOL) for f, w in plan.computed)
        flag_ref = None if g.is_const(flag) and not g.cval(flag) else em.ref(flag, as_bool=True)
        lines = list(em.lines)
        outs = []
        for wd in range(lay.words):
            lines.append(f"    w{wd} = P[{wd}].take(idx)")
            lines.extend(f"    w{wd} {op}= {x}" for op, x in plan.word(wd, per_word, str))
            outs.append(f"w{wd}")
        flag_out = "None" if flag_ref is None else (
            "np.ones(N, dtype=bool)" if flag_ref == "True" else f"np.broadcast_to({flag_ref}, (N,))")
        src = ("def body(X, P, idx):\n    N = idx.shape[0]\n" + "\n".join(lines)
               + f"\n    return ({', '.join(outs)},), {flag_out}\n")
        return _compile(src, "body", em.tables)

    def _prop_roots(self, props: Any) -> StateRoots:
        """The roots of the state properties: an invariant or the leak property fails (not
        counting --skip), a property raises a spec error, each sometimes property holds."""
        g = self.graph
        bad = []
        skip = self.model.skip  # --skip: properties the user chose not to check
        for name, cond in props.invariants:
            if name in skip:
                continue
            n = g.mk("not", (g.term(cond),), BOOL) if not g.is_const(g.term(cond)) else g.const(not g.cval(g.term(cond)))
            bad.append(n)
        for cond, _ in ([] if "leak" in skip else props.leak):
            bad.append(g.term(cond))
        root = g.mk("or", tuple(bad), BOOL) if bad else g.const(False)
        errors = [g.term(e.cond) for e in props.errors]
        error_root = g.mk("or", tuple(errors), BOOL) if errors else g.const(False)
        return StateRoots(root, error_root, [g.term(cond) for _, cond in props.sometimes])

    def _compile_props(self, props: Any, *, sometimes: bool = True) -> Callable[[np.ndarray], Any]:
        g = self.graph
        em = _Emitter(g, gathered=False)
        roots = self._prop_roots(props)
        root, error_root = roots.bad, roots.error
        bad_ref = em.ref(root, as_bool=True)
        error_ref = "None" if g.is_const(error_root) and not g.cval(error_root) else \
            f"np.broadcast_to({em.ref(error_root, as_bool=True)}, (N,))"
        some = [em.ref(r, as_bool=True) for r in roots.sometimes] if sometimes else []
        src = ("def props(X):\n    N = X.shape[1]\n" + "\n".join(em.lines)
               + f"\n    return np.broadcast_to({bad_ref}, (N,)), [np.broadcast_to(s, (N,)) for s in ({''.join(s + ', ' for s in some)})], {error_ref}\n")
        return _compile(src, "props", em.tables)

    # -- running ----------------------------------------------------------------------------

    def expand(self, P: np.ndarray, X: np.ndarray | None = None) -> Expansion:
        """Every successor of the packed block P (words x n); X is P unpacked, if at hand."""
        self._compile_numpy()
        if X is None:
            X = self.layout.unpack(P)
        n = P.shape[1]
        B = self.n_bindings
        with np.errstate(all="ignore"):
            masks = self._stage1(X)
            rows, binds, words, flags = [], [], [], []
            error_rows, error_binds = [], []
            all_rows: np.ndarray | None = None
            for b, prog in enumerate(self.programs):
                if prog is None:
                    continue
                failing: np.ndarray | None = None
                if prog.errors is not None:
                    m = masks[B + b]
                    if all_rows is None:
                        all_rows = np.arange(n, dtype=np.int64)
                    cand = all_rows if m is None else np.flatnonzero(m)
                    if cand.size:
                        hit = np.broadcast_to(prog.errors(X, cand), cand.shape)
                        if hit.any():
                            failing = cand[hit]
                            error_rows.append(failing)
                            error_binds.append(np.full(failing.size, b, dtype=np.int64))
                if prog.body is None:
                    continue
                m = masks[b]
                if m is None:
                    if all_rows is None:
                        all_rows = np.arange(n, dtype=np.int64)
                    idx = all_rows
                else:
                    idx = np.flatnonzero(m)
                if prog.rest is not None and idx.size:
                    keep = prog.rest(X, idx)
                    idx = idx[np.broadcast_to(keep, idx.shape)]
                if failing is not None and idx.size:  # a step that raises a spec error has no successor
                    fails = np.zeros(n, dtype=bool)
                    fails[failing] = True
                    idx = idx[~fails.take(idx)]
                if idx.size == 0:
                    continue
                w, flag = prog.body(X, P, idx)
                rows.append(idx)
                binds.append(b)
                words.append(w)
                flags.append(np.zeros(idx.size, dtype=bool) if flag is None else flag)
        k = self.layout.words
        e = np.zeros(0, dtype=np.int64)
        er = np.concatenate(error_rows) if error_rows else e
        eb = np.concatenate(error_binds) if error_binds else e.copy()
        if not rows:
            return Expansion(e, e.copy(), np.zeros((k, 0), dtype=np.uint64), np.zeros(0, bool), er, eb)
        sizes = [r.size for r in rows]
        return Expansion(np.concatenate(rows), np.repeat(np.array(binds, dtype=np.int64), sizes),
                         _words(words, k), np.concatenate(flags), er, eb)

    def state_properties(self, X: np.ndarray, *, sometimes: bool = True) -> StateChecks:
        """Per row: does an invariant or the leak property fail (where no property raises a
        spec error); each sometimes property (an empty list with sometimes=False, once a search
        has reached them all); and where a property raises a spec error."""
        self._compile_numpy()
        with np.errstate(all="ignore"):
            bad, some, error = (self._props if sometimes else self._props_only)(X)
        if error is not None:
            bad = bad & ~error
            if not error.any():
                error = None
        return StateChecks(bad, some, error)
