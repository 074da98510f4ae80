"""The SMT interpreter: the symbolic tracer's Term graphs read as z3 formulas.

The symbolic interpreter (ownership.ir.tracer) traces every action binding once into
expression graphs: the guard, the value of every assignment, the condition of every kernel
flag, and the spec's state properties. This module gives those graphs a meaning in z3, so the
bounded model checker and k-induction (ownership.engines.bmc) check the spec's own action
functions and the kernel's own operations: nothing is written a second time for the solver
(docs/adr/0001-trace-to-our-own-terms.md).

Encoding (docs/engines.md, "the symbolic encoding"):
- Every integer value is a signed bit-vector of ONE width W, chosen per model by an interval
  analysis of every term from the slot domains, the ranges of symbolic parameters and the
  constants: W holds every value any term can take on an in-domain state (plus a margin bit
  for floor division), so bit-vector arithmetic equals Python's unbounded integers and
  nothing wraps silently. Conditions and boolean slots are z3 Bools.
- Page sets are bitmasks, as in the concrete interpreter; `first`, `nth` and `popcount`
  unroll over the bits the mask can have; page(p) is {p} for p >= 0 and empty for p < 0.
- W is the width of the templates' values; inside, each node is computed at its own
  interval's width (NOTE(narrow-values)), counts of bits in as few bits as they need and
  page(p) as a decoder (NOTE(narrow-counts)), and a count compared with a constant in unary
  (NOTE(unary-counts)): the same values on in-domain states, in fewer and simpler clauses.
  Floor division and modulo follow Python.
- What the concrete interpreter refuses at run time (an assignment leaving its slot's
  domain, division by zero, a negative shift count, a page outside its pool: the tracer's
  error events, ownership.lang.faults) becomes the *error condition* of a binding: each error
  under the guards before it, as the concrete interpreter raises it before any later
  `require`. A step that raises one has no successor; engines report it as a spec error.

One Encoding holds templates over a generic pre-state `x`, a selector `act` (which binding
fires) and a post-state `y`; engines instantiate them for step k by substitution (`at`).
Translation is cached per Term object, so a graph shared by several roots is translated once.

Symbolic parameters: `trace_parametric` traces a fresh copy of the model with a parameter
attribute replaced by a Term variable (index >= model.width), after checking that the
parameter sizes no pool, domain, initial value or action argument.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from ..errors import SpecError, UsageError, shorten
from ..ir import ops
from ..ir.ops import Interval, signed_bits
from ..ir.tracer import BOOL, INT, Term, TracedModel, postorder, state_property_graphs, trace_model
from ..lang.model import Model, SlotInfo
from ..lang.spec import Spec, did_you_mean

#: The pseudo-property of a step that the concrete interpreter would refuse with a SpecError
#: (a value outside its slot's domain, division by zero, a negative shift count).
SPEC_ERROR = "spec-error"

#: Refuse models whose values need wider bit-vectors than this (a shift by a huge amount).
MAX_WIDTH = 1024

#: A parameter range this large or smaller is checked value by value for layout changes.
LAYOUT_CHECK_ALL = 256

#: The range of a symbolic parameter given without one (`--symbolic prefill_pool`).
DEFAULT_HIGH = 1024

#: z3's resource limit for each question of Encoding.footprints (about 0.1 s): a question it
#: leaves unanswered counts as a write, which only makes fewer steps commute.
FOOTPRINT_RLIMIT = 5_000_000


# --------------------------------------------------------------------------- graphs


def _postorder(roots: Iterable[Any]) -> list[Term]:
    """Every Term reachable from `roots`, children before parents, each once (no recursion:
    kernel graphs chain one `|` per page and would overflow Python's stack on big pools)."""
    return postorder(list(roots))


#: The largest page set whose counts are also kept in unary (NOTE(unary-counts)).
UNARY_PAGES = 128

def _page_count(term: Term) -> Any | None:
    """The page number of a `page(p)` term (op "bit"), or None for any other term. page(p) is
    {p} for p >= 0 and the empty set for p < 0, as in the concrete interpreter."""
    if term.op == "bit":
        return term.args[0]
    return None


def _decided(op: str, a: Interval, b: Interval) -> bool | None:
    """A comparison that the intervals of its sides decide, or None."""
    (alo, ahi), (blo, bhi) = a, b
    if op in ("eq", "ne"):
        if ahi < blo or bhi < alo:
            return op == "ne"
        if alo == ahi == blo == bhi:
            return op == "eq"
        return None
    if op == "lt":
        return True if ahi < blo else False if alo >= bhi else None
    if op == "le":
        return True if ahi <= blo else False if alo > bhi else None
    if op == "gt":
        return True if alo > bhi else False if ahi <= blo else None
    return True if alo >= bhi else False if ahi < blo else None


def _mask_bits(m: Interval) -> int | None:
    """How many low bits a mask in this interval can have set; None if it can be negative."""
    return m[1].bit_length() if m[0] >= 0 else None


def _interval_of(term: Term, arg: Any) -> Interval:
    """The interval of one Term from the intervals of its arguments (`arg` looks them up):
    the table's rule (NOTE(one-interval)), after refusing what z3 cannot hold."""
    op, args = term.op, term.args
    if op == "const":
        v = int(args[0])
        return v, v
    if term.sort == BOOL and op != "ite":
        return 0, 1
    if op not in ops.OPERATIONS:
        raise _unsupported(term)
    if op == "bit" and arg(args[0])[1] > MAX_WIDTH:
        raise _too_wide(term)
    if op in ("shl", "shr") and arg(args[1])[1] > MAX_WIDTH:
        raise _too_wide(term)
    if op == "select":
        values, idx, default = args
        return ops.interval(op, [*(arg(v) for v in values), arg(idx)], (default,))
    if op == "nth":
        return ops.interval(op, [arg(args[0]), arg(args[1])], (args[2],))
    return ops.interval(op, [arg(a) for a in args], ())


def _unsupported(term: Term) -> SpecError:
    return SpecError(
        f"the symbolic engine cannot encode the operation {term.op!r}; the spec language's"
        " operations are listed in ownership.lang.values. Use the explicit engine for this spec."
    )


def _too_wide(term: Term) -> SpecError:
    return SpecError(
        f"a value of the spec needs more than {MAX_WIDTH} bits in the symbolic engine"
        f" ({term.op} by a count that can exceed {MAX_WIDTH}); bound the shift or use the explicit engine."
    )


# --------------------------------------------------------------------------- symbolic parameters


@dataclass(frozen=True)
class SymbolicParam:
    """An integer parameter left unknown within lo..hi (`--symbolic prefill_pool=1..8`)."""

    name: str
    lo: int
    hi: int

    def show(self) -> str:
        return f"{self.name}={self.lo}..{self.hi}"


_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")


def parse_symbolic(texts: Iterable[str], spec_cls: type[Spec], env: dict[str, int]) -> list[SymbolicParam]:
    """`NAME` or `NAME=LO..HI` options to SymbolicParams, checked against the spec's parameters.

    Without a range a parameter ranges from its declared minimum to DEFAULT_HIGH."""
    out: list[SymbolicParam] = []
    for text in texts:
        name, sep, rng = text.partition("=")
        name = name.strip()
        if name not in spec_cls._params:
            raise UsageError(
                f"--symbolic {text!r}: spec {spec_cls.__name__} has no parameter {name!r}."
                + did_you_mean(name, spec_cls._params) + f" Parameters: {', '.join(spec_cls._params)}."
            )
        p = spec_cls._params[name]
        derived = [n for n, q in spec_cls._params.items() if q.derived is not None and name in q.derived.names()]
        if derived:
            raise UsageError(f"--symbolic {name}: parameter {derived[0]} is derived from it"
                             f" ({derived[0]} = {spec_cls._params[derived[0]].derived!r}), and a derived parameter"
                             f" is a number known when the spec is built; give {derived[0]} a value with --param"
                             f" {derived[0]}=N, or leave {name} concrete")
        if sep:
            m = _RANGE.match(rng.replace("_", ""))
            if m is None:
                raise UsageError(f"--symbolic {shorten(repr(text), 60)}: expected NAME=LO..HI, e.g. --symbolic {name}=1..8")
            if max(len(m.group(1).lstrip("-0")), len(m.group(2).lstrip("-0"))) > 18:
                # (int() refuses more than 4,300 digits: an internal error, issue 29)
                raise UsageError(f"--symbolic {shorten(text, 60)}: a bound has at most 18 digits (no pool or slot"
                                 f" holds more than 134,217,728 values); give a range such as {name}=1..8")
            lo, hi = int(m.group(1)), int(m.group(2))
        else:
            lo, hi = p.minimum, max(DEFAULT_HIGH, p.minimum)
        if lo > hi:
            raise UsageError(f"--symbolic {text!r}: the range {lo}..{hi} is empty")
        if lo < p.minimum:
            raise UsageError(f"--symbolic {text!r}: {name} must be >= {p.minimum} ({p.help})")
        if any(s.name == name for s in out):
            raise UsageError(f"--symbolic {name} is given twice")
        out.append(SymbolicParam(name, lo, hi))
    return out


def _layout(model: Model) -> tuple[Any, ...]:
    slots = tuple((s.name, s.offset, s.length, s.lo, s.hi) for s in model.slots)
    bindings = tuple((b.action.name, b.args) for b in model.bindings)
    pools = tuple((p.name, p.size) for p in model.pools.values())
    return slots, model.initial, bindings, pools


def _declaration_line(cls: type[Spec], attr: str) -> tuple[str | None, int | None]:
    """The file and line where a spec class assigns `attr` (for error messages)."""
    try:
        lines, start = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return cls.source_file(), None
    pat = re.compile(rf"^\s*{re.escape(attr)}\s*(:[^=]*)?=")
    for i, text in enumerate(lines):
        if pat.match(text):
            return cls.source_file(), start + i
    return cls.source_file(), start


def _sizes(model: Model, other: Model, name: str, value: int) -> SpecError:
    """The error for a parameter that changes the model's layout: which slot or pool it sizes."""
    cls = model.spec_cls
    here = model.env[name]
    what, attr = "the initial state", None
    for pname, info in model.pools.items():
        if other.pools[pname].size != info.size:
            what, attr = f"pool {pname} ({info.size} pages at {name}={here}, {other.pools[pname].size} at {name}={value})", pname
            break
    else:
        for a, b in zip(model.slots, other.slots):
            if (a.length, a.lo, a.hi) != (b.length, b.lo, b.hi):
                base = a.name.split(".")[0]
                what = f"slot {a.name} (domain {a.lo}..{a.hi} x {a.length} at {name}={here}, {b.lo}..{b.hi} x {b.length} at {name}={value})"
                attr = base if base in cls._slots or base in cls._pools else None
                break
        else:
            if len(model.bindings) != len(other.bindings):
                what = f"the arguments of the actions ({len(model.bindings)} bindings at {name}={here}, {len(other.bindings)} at {name}={value})"
    file, line = _declaration_line(cls, attr) if attr else (cls.source_file(), None)
    return SpecError(
        f"parameter {name} cannot be symbolic: it sizes {what}. The symbolic engine keeps the"
        " state layout fixed; leave only parameters used inside actions and properties symbolic"
        " (and check the others at several values with --param).",
        file=file, line=line,
    )


def check_layout(model: Model, params: Sequence[SymbolicParam]) -> None:
    """Refuse a symbolic parameter that sizes a pool, a domain, an initial value or the
    arguments of an action: the model must have the same layout at every value in range."""
    cls = model.spec_cls
    base = _layout(model)
    for p in params:
        span = p.hi - p.lo + 1
        values = range(p.lo, p.hi + 1) if span <= LAYOUT_CHECK_ALL else (p.lo, (p.lo + p.hi) // 2, p.hi)
        for v in values:
            if v == model.env[p.name]:
                continue
            env = dict(model.env)
            env[p.name] = v
            try:
                other = Model(cls(params=env, fixes=model.spec.fixes, release=model.spec.release))
            except SpecError as e:
                raise SpecError(f"parameter {p.name} cannot be symbolic over {p.lo}..{p.hi}: at {p.name}={v}, {e}") from None
            if _layout(other) != base:
                raise _sizes(model, other, p.name, v)


def trace_parametric(model: Model, params: Sequence[SymbolicParam]) -> tuple[Model, TracedModel, dict[int, SymbolicParam]]:
    """Trace a fresh copy of `model` whose spec sees each symbolic parameter as a Term variable.

    Returns the copy (whose `spec` holds the Terms), its TracedModel, and the variable index of
    each parameter (model.width + j). The cached trace of `model` is left untouched. Python
    control flow on a symbolic parameter raises a SpecError naming the spec's file and line."""
    if not params:
        return model, trace_model(model), {}
    check_layout(model, params)
    spec = copy.copy(model.spec)
    by_index: dict[int, SymbolicParam] = {}
    for j, p in enumerate(params):
        index = model.width + j
        object.__setattr__(spec, p.name, Term("var", (index,), INT))
        by_index[index] = p
    clone = copy.copy(model)
    clone.__dict__.pop("_traced", None)
    clone.spec = spec
    names = ", ".join(p.name for p in params)
    try:
        traced = trace_model(clone)
    except SpecError as e:
        text = str(e)
        prefix = f"{e.file}:{e.line}: " if e.file and e.line else (f"{e.file}: " if e.file else "")
        text = text[len(prefix):] if text.startswith(prefix) else text
        what = (text.split(" on a state value")[0] if " on a state value" in text else text).replace("a state value", "it")
        raise SpecError(
            f"parameter {names} cannot be symbolic: the spec uses it here in Python control flow ({what}), which"
            " needs a number known when tracing. Write If(cond, a, b), Min/Max, comparisons and"
            " arithmetic on it instead, or give it a value with --param.",
            file=e.file, line=e.line,
        ) from None
    return clone, traced, by_index


def trace_lemmas(model: Model) -> tuple[list[tuple[str, Any]], list[Any]]:
    """The spec's lemmas (strengthening invariants, `@lemma`) as graphs over one state, and
    their possible spec errors (events)."""
    lemmas = [p for p in model.spec_cls._properties.values() if p.kind == "lemma"]
    if not lemmas:
        return [], []
    return state_property_graphs(model, lemmas, "lemma")


# --------------------------------------------------------------------------- the encoding


@dataclass
class LiveObligation:
    """One liveness obligation (a property, for one request or one page) as z3 templates over
    x: whenever p holds, q holds then or later (`eventually`: from the initial state)."""

    name: str
    kind: str
    p: Any
    q: Any
    request: int | None = None
    page: tuple[str, int] | None = None
    text_p: str = ""
    text_q: str = ""


@dataclass
class _Binding:
    """One traced binding as z3 templates over the pre-state x."""

    guard: Any
    flags: dict[str, Any]                        # property -> condition (guard not included)
    error: Any                                   # raises a spec error (the guards before each included)
    writes: dict[int, Any] = field(default_factory=dict)


class Encoding:
    """A model's traced graphs as z3 templates over a pre-state x, a selector and a post-state y."""

    def __init__(self, model: Model, traced: TracedModel, *, params: dict[int, SymbolicParam] | None = None,
                 lemmas: tuple[list[tuple[str, Any]], list[Any]] | None = None) -> None:
        self.model = model
        self.params = dict(params or {})
        props = traced.properties
        lemma_graphs, lemma_errors = lemmas or ([], [])
        roots: list[Any] = []
        for action in traced.actions:
            roots.extend(e.cond for e in action.events)
            roots.extend(action.writes.values())
            for _, cond, details in action.flags:
                roots.extend(x for x in (cond, details.get("request"), details.get("other"), details.get("expected"))
                             if x is not None)
        roots.extend(c for _, c in props.invariants)
        roots.extend(c for _, c in props.sometimes)
        roots.extend(c for c, _ in props.leak)
        roots.extend(e.cond for e in props.errors)
        for _, _, p, q in props.liveness:
            roots.extend((p, q))
        roots.extend(e.cond for _, e in props.liveness_errors)
        roots.extend(c for _, c in lemma_graphs)
        roots.extend(e.cond for e in lemma_errors)
        order = _postorder(roots)

        # Interval analysis: the width that holds every value.
        ivl: dict[int, Interval] = {}

        def arg_ivl(a: Any) -> Interval:
            if isinstance(a, Term):
                return ivl[id(a)]
            if isinstance(a, bool):
                return int(a), int(a)
            if isinstance(a, int):
                return int(a), int(a)
            raise SpecError(f"the symbolic engine cannot encode the value {a!r} of type {type(a).__name__}")

        for term in order:
            if term.op == "var":
                ivl[id(term)] = self._var_interval(term.args[0])
            else:
                ivl[id(term)] = _interval_of(term, arg_ivl)
        bits = 2
        for lo, hi in ivl.values():
            bits = max(bits, signed_bits(lo, hi))
        for s in model.slots:
            bits = max(bits, signed_bits(s.lo, s.hi))
        for p in self.params.values():
            bits = max(bits, signed_bits(p.lo, p.hi))
        bits += 1  # margin: floor division computes a - (a mod b) before dividing
        if bits > MAX_WIDTH:
            raise SpecError(f"the values of this spec need {bits}-bit numbers; the symbolic engine stops at {MAX_WIDTH}")
        self.W = bits
        self._ivl = ivl

        # Template variables.
        self.slot_of: list[SlotInfo] = [None] * model.width  # type: ignore[list-item]
        for s in model.slots:
            for k in range(s.length):
                self.slot_of[s.offset + k] = s
        self.x = self.fresh_state("x")
        self.y = self.fresh_state("y")
        n = len(model.bindings)
        self.act_bits = max(1, n.bit_length())
        self.act = z3.BitVec("act", self.act_bits)
        self.param_vars: dict[int, Any] = {i: z3.BitVec(f"param:{p.name}", self.W) for i, p in self.params.items()}

        self._templates: dict[tuple[Any, ...], Any] = {}
        #: NOTE(unary-counts): the unary prefix counts of a page set, by the set's Term
        self._unary: dict[int, list[list[Any]]] = {}
        # Translation, cached per Term.
        self._z: dict[int, Any] = {}
        for term in order:
            self._z[id(term)] = self._translate(term)

        self.bindings: list[_Binding] = [self._binding(action) for action in traced.actions]
        skip: frozenset[str] = model.skip
        self.invariants: list[tuple[str, Any]] = [
            (name, self.as_bool(self.val(c))) for name, c in props.invariants if name not in skip]
        self.sometimes: list[tuple[str, Any]] = [(name, self.as_bool(self.val(c))) for name, c in props.sometimes]
        leak = [self.as_bool(self.val(c)) for c, _ in props.leak] if "leak" not in skip else []
        self.leak: Any = z3.Or(leak) if leak else z3.BoolVal(False)
        self.lemmas: list[tuple[str, Any]] = [(name, self.as_bool(self.val(c))) for name, c in lemma_graphs]
        errors = [self.as_bool(self.val(e.cond)) for e in props.errors]
        #: over x: a state property raises a spec error (lemmas: also one of the lemmas does)
        self.state_errors: Any = z3.Or(errors) if errors else z3.BoolVal(False)
        more = [self.as_bool(self.val(e.cond)) for e in lemma_errors]
        self.lemma_errors: Any = z3.Or(more) if more else z3.BoolVal(False)
        self.trans = self._transition()
        self._actions = traced.actions
        #: NOTE(footprints): what each binding reads and writes as a step, computed on demand.
        #: A binding *writes* a slot only where some in-domain state enabling it (and raising no
        #: spec error there) gets another value in it: z3 decides it per slot, because the
        #: kernel's operations assign whole pools, mostly to the values they had (decode_commit
        #: of sglang_pd assigns 14 slots and changes one). It *reads* the slots that its guards,
        #: its spec errors and those writes' values mention; its kernel flags are not part of
        #: the step. In-domain states suffice: every state of an execution is in its domain (a
        #: value outside it is a spec error, not a step).
        self._footprints: list[tuple[set[int], set[int]]] | None = None
        checked = set(model.liveness_checked())
        #: the liveness obligations, in the explicit engine's order (liveness.instances)
        self.live: list[LiveObligation] = [
            LiveObligation(prop.name, prop.kind, self.as_bool(self.val(p)), self.as_bool(self.val(q)), request=r)
            for prop, r, p, q in props.liveness if prop.name in checked]
        for ob in model.kernel_obligations():
            held = self.x[ob.at] if self.slot_of[ob.at].is_bool else self.x[ob.at] != 0
            self.live.append(LiveObligation(ob.name, "leads-to", held, z3.Not(held), page=(ob.pool, ob.page),
                                            text_p=ob.text_p, text_q=ob.text_q))
        more = [self.as_bool(self.val(e.cond)) for name, e in props.liveness_errors if name in checked]
        #: over x: a checked liveness property raises a spec error in x
        self.live_errors: Any = z3.Or(more) if more else z3.BoolVal(False)

    # -- variables ----------------------------------------------------------------------------

    def _var_interval(self, i: int) -> Interval:
        if i < self.model.width:
            info = self._slot(i)
            return info.lo, info.hi
        p = self.params.get(i)
        if p is None:
            raise SpecError(f"the traced graphs use variable {i}, which is neither a slot nor a symbolic parameter")
        return p.lo, p.hi

    def _slot(self, i: int) -> SlotInfo:
        for s in self.model.slots:
            if s.offset <= i < s.offset + s.length:
                return s
        raise IndexError(i)

    def fresh_state(self, tag: str) -> list[Any]:
        """New z3 constants for one state, named after the slots (`d_stage[r1]@3`)."""
        out: list[Any] = []
        for s in self.model.slots:
            for k in range(s.length):
                name = s.name if s.shape == "scalar" else f"{s.name}[{'r' if s.shape == 'request' else ''}{k + s.base}]"
                out.append(z3.Bool(f"{name}@{tag}") if s.is_bool else z3.BitVec(f"{name}@{tag}", self.W))
        return out

    def fresh_act(self, tag: str) -> Any:
        return z3.BitVec(f"act@{tag}", self.act_bits)

    # -- values -------------------------------------------------------------------------------
    #
    # NOTE(narrow-values): every integer node is translated at the width its interval needs
    # (`_width`), not at W: the interval analysis that chose W bounds each node on every
    # in-domain state, and every state the engines ask about is in its domain (the initial
    # state, successors of steps that raise no spec error, and the arbitrary states of the
    # induction step and of NOTE(footprints), whose domain is asserted). On such states a node's
    # narrow value is its W-bit value, so the formulas mean what the W-bit ones meant; they
    # just bit-blast into fewer clauses (the step of sglang_pd at 6 decode pages: a third
    # fewer). How each operation stays exact:
    # - a slot or a parameter is the low bits of its W-bit variable (its domain fits in them);
    # - +, -, *, negation, complement and the bitwise operations are computed at the width of
    #   their result, on operands sign-extended or truncated to it: two's complement arithmetic
    #   modulo 2^w agrees with Python's in the low w bits, and the result's interval fits w;
    # - comparisons sign-extend both sides to the wider of the two; `select` compares its
    #   index only with the positions its interval can reach;
    # - floor division, modulo and shifts are computed at W as before (they are rare; their
    #   value where they fault, a zero divisor or a negative count, is a spec error and reaches
    #   no step, flag or property), then truncated to their result's width;
    # - page sets: NOTE(narrow-counts).
    # `val` gives every node at W (sign-extended: free in the bit-blasted formula), for the
    # templates the engines instantiate; a slot read as a whole is its own variable.
    #
    # NOTE(narrow-counts): `count`, and the running counts inside `first` and `nth`, add up
    # single bits: they are computed in as few bits as the largest count needs (3 bits for a
    # 6-page pool, instead of W adders of W bits each), and `page(p)` is a decoder (bit i is
    # the condition p == i, for the positions p can take) instead of a barrel shifter: both
    # are the same numbers, in a fraction of the clauses. The LIFO free list (ownership.kernel:
    # alloc takes its head with `select`, free prepends with `nth` after `count`) was two thirds
    # of sglang_pd's step relation before.

    def val(self, a: Any) -> Any:
        """The z3 expression of a Term or a Python constant, an integer at width W."""
        if isinstance(a, Term):
            if a.op == "var":
                i = a.args[0]
                return self.x[i] if i < self.model.width else self.param_vars[i]
            e = self._z[id(a)]
            return e if z3.is_bool(e) else self._fit(e, self.W)
        if isinstance(a, bool):
            return z3.BoolVal(a)
        if isinstance(a, int):
            return z3.BitVecVal(int(a), self.W)
        raise SpecError(f"the symbolic engine cannot encode the value {a!r} of type {type(a).__name__}")

    def as_bv(self, e: Any) -> Any:
        """An integer: a condition counts as 0 or 1, as in the concrete interpreter."""
        if z3.is_bool(e):
            return z3.If(e, z3.BitVecVal(1, self.W), z3.BitVecVal(0, self.W))
        return e

    def as_bool(self, e: Any) -> Any:
        """A condition: an integer holds where it is not 0, as in the concrete interpreter."""
        if z3.is_bool(e):
            return e
        return e != z3.BitVecVal(0, e.size())

    def _ivl_of(self, a: Any) -> Interval:
        if isinstance(a, Term):
            return self._ivl[id(a)]
        return int(a), int(a)

    def _width(self, a: Any) -> int:
        """The width of a node's narrow value: its interval's signed width, at most W."""
        return min(self.W, signed_bits(*self._ivl_of(a)))

    @staticmethod
    def _fit(e: Any, w: int) -> Any:
        """A bit-vector sign-extended or truncated to width w (NOTE(narrow-values))."""
        n = e.size()
        if n == w:
            return e
        return z3.SignExt(w - n, e) if n < w else z3.Extract(w - 1, 0, e)

    def _nval(self, a: Any) -> Any:
        """The narrow value of a Term or a constant: a Bool, or a bit-vector of `_width(a)`."""
        if isinstance(a, Term):
            return self._z[id(a)]
        if isinstance(a, bool):
            return z3.BoolVal(a)
        if isinstance(a, int):
            return z3.BitVecVal(int(a), signed_bits(int(a), int(a)))
        raise SpecError(f"the symbolic engine cannot encode the value {a!r} of type {type(a).__name__}")

    def _nbv(self, a: Any, w: int | None = None) -> Any:
        """A node's narrow value as an integer (a condition is 0 or 1), at width w if given."""
        e = self._nval(a)
        if z3.is_bool(e):
            e = z3.If(e, z3.BitVecVal(1, 2), z3.BitVecVal(0, 2))
        return e if w is None else self._fit(e, w)

    def _pair(self, a: Any, b: Any) -> tuple[Any, Any]:
        """Two integer operands at the wider of their widths (for a comparison)."""
        x, y = self._nbv(a), self._nbv(b)
        w = max(x.size(), y.size())
        return self._fit(x, w), self._fit(y, w)

    def _translate(self, t: Term) -> Any:
        """The narrow value of one node (NOTE(narrow-values)), from its arguments' narrow values."""
        op, args = t.op, t.args
        W = self.W
        if op == "var":
            i = args[0]
            e = self.x[i] if i < self.model.width else self.param_vars[i]
            return e if z3.is_bool(e) else self._fit(e, self._width(t))
        if op == "const":
            return z3.BoolVal(bool(args[0])) if t.sort == BOOL else z3.BitVecVal(int(args[0]), self._width(t))
        if op in ("eq", "ne", "lt", "le", "gt", "ge") and not any(
                isinstance(x, Term) and x.sort == BOOL for x in args):
            decided = _decided(op, self._ivl_of(args[0]), self._ivl_of(args[1]))
            if decided is not None:
                return z3.BoolVal(decided)
            unary = self._count_compare(op, args[0], args[1])
            if unary is not None:
                return unary
        if op in ("eq", "ne"):
            a, b = self._nval(args[0]), self._nval(args[1])
            if not (z3.is_bool(a) and z3.is_bool(b)):
                a, b = self._pair(args[0], args[1])
            return a == b if op == "eq" else a != b
        if op in ("lt", "le", "gt", "ge"):
            a, b = self._pair(args[0], args[1])
            return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]
        if op in ("and", "or", "xor"):
            a, b = self.as_bool(self._nval(args[0])), self.as_bool(self._nval(args[1]))
            return z3.And(a, b) if op == "and" else z3.Or(a, b) if op == "or" else z3.Xor(a, b)
        if op == "not":
            return z3.Not(self.as_bool(self._nval(args[0])))
        w = self._width(t)
        if op == "ite":
            c, a, b = self.as_bool(self._nval(args[0])), self._nval(args[1]), self._nval(args[2])
            if z3.is_bool(a) and z3.is_bool(b):
                return z3.If(c, a, b)
            a, b = self._nbv(args[1]), self._nbv(args[2])
            wide = max(a.size(), b.size(), w)
            return self._fit(z3.If(c, self._fit(a, wide), self._fit(b, wide)), w)
        if op == "select":
            idx = self._nbv(args[1])
            lo, hi = self._ivl_of(args[1])
            values = [self._nbv(x) for x in args[0]]
            wide = max([w, *(x.size() for x in values)])
            out = z3.BitVecVal(int(args[2]), wide)
            affine = self._count_affine(args[1])
            for i in reversed(range(len(values))):
                if lo <= i <= hi:  # (the index can be i: i fits the index's width)
                    if affine is not None:  # index = sign * count(mask) + offset (NOTE(unary-counts))
                        mask, sign, offset = affine
                        hit = self._count_is(mask, sign * (i - offset))
                    else:
                        hit = idx == z3.BitVecVal(i, idx.size())
                    out = z3.If(hit, self._fit(values[i], wide), out)
            return self._fit(out, w)
        if op in ("neg", "compl"):
            a = self._nbv(args[0], w)
            return -a if op == "neg" else ~a
        if op == "popcount":
            m = self._nbv(args[0])
            lo, hi = self._ivl_of(args[0])
            if lo < 0:
                m = z3.SignExt(1, m)  # (|m| of the most negative m needs one bit more)
                m = z3.If(m < 0, -m, m)
            n = min(max(hi.bit_length(), (-lo).bit_length() if lo < 0 else 0), m.size())
            if n == 0:
                return z3.BitVecVal(0, w)
            return self._fit(z3.ZeroExt(1, self._count_bits([z3.Extract(i, i, m) for i in range(n)])), w)
        p = _page_count(t)
        if p is not None:
            return self._page(self._nbv(p), self._ivl_of(p), w)
        if op == "first":
            return self._first(t, w)
        if op == "nth":
            return self._nth(t, w)
        if op in ("add", "sub", "mul", "bitand", "bitor", "bitxor"):
            a, b = self._nbv(args[0], w), self._nbv(args[1], w)
            if op == "add":
                return a + b
            if op == "sub":
                return a - b
            if op == "mul":
                return a * b
            return a & b if op == "bitand" else a | b if op == "bitor" else a ^ b
        a, b = self._nbv(args[0], W), self._nbv(args[1], W)
        if op in ("div", "mod"):
            # (a zero divisor is a spec error recorded by the tracer: the value does not matter)
            mod = a % b  # bvsmod: the sign of the divisor, as Python's %
            return self._fit(mod if op == "mod" else (a - mod) / b, w)
        if op in ("shl", "shr"):
            return self._fit(a << b if op == "shl" else a >> b, w)  # >>: arithmetic, as Python's
        raise _unsupported(t)

    def _count_bits(self, bits: list[Any]) -> Any:
        """How many of the 1-bit vectors `bits` are 1, as an unsigned bit-vector just wide
        enough for len(bits) (NOTE(narrow-counts)); at least one bit wide."""
        cw = max(1, len(bits).bit_length())
        if not bits:
            return z3.BitVecVal(0, cw)
        wide = [z3.ZeroExt(cw - 1, b) if cw > 1 else b for b in bits]
        return wide[0] if len(wide) == 1 else z3.Sum(wide)

    def _page(self, n: Any, ivl: Interval, w: int) -> Any:
        """page(n) = {n} for n >= 0, the empty set for n < 0, as a mask of width w: bit i is
        the condition n == i, for the positions i that n can take (NOTE(narrow-counts))."""
        lo, hi = ivl
        top = min(hi, w - 1)
        if top < max(lo, 0):
            return z3.BitVecVal(0, w)
        one, zero = z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)
        bits = [z3.If(n == z3.BitVecVal(i, n.size()), one, zero) if max(lo, 0) <= i else zero
                for i in range(top + 1)]
        out = bits[0] if len(bits) == 1 else z3.Concat(*reversed(bits))
        return z3.ZeroExt(w - out.size(), out) if out.size() < w else out

    def _mask(self, arg: Any) -> tuple[Any, int]:
        """A page set's bits as a bit-vector, and how many of its low bits can be set: those
        below its interval's top for a set that cannot be negative, else W (as two's complement
        at W, where a negative set's bits above its width repeat its sign)."""
        bits = _mask_bits(self._ivl_of(arg))
        m = self._nbv(arg)
        if bits is None:
            return self._fit(m, self.W), self.W
        size = min(bits, self.W)
        return self._fit(m, max(m.size(), size)), size

    def _prefix_counts(self, m: Any, n: int) -> tuple[list[Any], list[Any]]:
        """The bits of m below n as conditions, and how many of them are set below each, as
        non-negative bit-vectors just wide enough (NOTE(narrow-counts)), one sign bit included."""
        bits = [z3.Extract(i, i, m) == 1 for i in range(n)]
        cw = max(1, n.bit_length()) + 1
        one, zero = z3.BitVecVal(1, cw), z3.BitVecVal(0, cw)
        counts = [zero]
        for b in bits[:-1] if bits else []:
            counts.append(counts[-1] + z3.If(b, one, zero))
        return bits, counts

    def _first(self, t: Term, w: int) -> Any:
        m, size = self._mask(t.args[0])
        if size == 0:
            return z3.BitVecVal(0, w)
        n = self._nbv(t.args[1])
        bits, counts = self._prefix_counts(m, size)
        cmp = max(n.size(), counts[0].size())
        n = self._fit(n, cmp)
        keep = [z3.If(z3.And(bits[i], self._fit(counts[i], cmp) < n), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
                for i in range(size)]
        out = keep[0] if size == 1 else z3.Concat(*reversed(keep))
        # (the n lowest bits of a set: never more than its interval's top, which fits w)
        return z3.ZeroExt(w - size, out) if size < w else z3.Extract(w - 1, 0, out)

    def _nth(self, t: Term, w: int) -> Any:
        m, size = self._mask(t.args[0])
        j = self._nbv(t.args[1])
        jlo, jhi = self._ivl_of(t.args[1])
        out = z3.BitVecVal(int(t.args[2]), w)
        bits, counts = self._prefix_counts(m, size)
        cmp = max(j.size(), counts[0].size())
        jj = self._fit(j, cmp)
        ones = self._ones(t.args[0]) if jlo == jhi else None
        for i in reversed(range(size)):
            if jlo <= i and jhi >= 0:  # (the count below bit i is 0..i: j can be it)
                below = (self._exactly(ones, i, jlo) if ones is not None  # NOTE(unary-counts)
                         else self._fit(counts[i], cmp) == jj)
                out = z3.If(z3.And(bits[i], below), z3.BitVecVal(i, w), out)
        return out

    # NOTE(unary-counts): the kernel's LIFO free list compares counts of a page set with
    # constants: free() tests count(pages) > j and reads old[j - count(pages)] for each
    # position j, and nth(pages, j) asks whether exactly j pages lie below page i. As sums in
    # binary, each such test is an adder and a comparator (and z3's simplifier, solving
    # `j - count == i` for one bit of the sum, copies the adder into every test). Here a page
    # set's counts are also kept in unary, once per set: ones[i][c] is the condition "at least
    # c of the bits below i are set", by the recurrence ones[i+1][c] = ones[i][c] or (bit i and
    # ones[i][c-1]) (i * (i + 1) / 2 gates); a comparison of the count with a constant is one
    # of those conditions, or two. Only for sets whose interval is non-negative (their bits
    # are all there is), only where the other side is a constant, and only for sets of at
    # most UNARY_PAGES bits (i * (i + 1) / 2 gates: half a million for a pool of 1,000 pages):
    # the binary sum stays the value everywhere else.

    def _ones(self, mask: Any) -> list[list[Any]] | None:
        """The unary prefix counts of a page set (NOTE(unary-counts)), or None when the set
        is a constant or can be negative."""
        if not isinstance(mask, Term) or self._ivl_of(mask)[0] < 0:
            return None
        got = self._unary.get(id(mask))
        if got is None:
            m, size = self._mask(mask)
            if size > UNARY_PAGES:
                return None
            rows: list[list[Any]] = [[z3.BoolVal(True)]]
            for i in range(size):
                bit, prev = z3.Extract(i, i, m) == 1, rows[-1]
                row = [z3.BoolVal(True)]
                for c in range(1, i + 2):
                    carry = bit if c == 1 else z3.And(bit, prev[c - 1])
                    row.append(z3.Or(prev[c], carry) if c <= i else carry)
                rows.append(row)
            got = self._unary[id(mask)] = rows
        return got

    @staticmethod
    def _at_least(ones: list[list[Any]], i: int, c: int) -> Any:
        """At least c of the bits below i are set."""
        return z3.BoolVal(True) if c <= 0 else z3.BoolVal(False) if c > i else ones[i][c]

    def _exactly(self, ones: list[list[Any]], i: int, c: int) -> Any:
        """Exactly c of the bits below i are set."""
        if c < 0 or c > i:
            return z3.BoolVal(False)
        if c == i:
            return self._at_least(ones, i, c)
        return z3.And(self._at_least(ones, i, c), z3.Not(self._at_least(ones, i, c + 1)))

    def _count_is(self, mask: Any, c: int) -> Any:
        """count(mask) == c, for a set with unary counts."""
        ones = self._ones(mask)
        assert ones is not None
        return self._exactly(ones, len(ones) - 1, c)

    def _constant(self, a: Any) -> int | None:
        """The one value a node can take, if its interval has one."""
        lo, hi = self._ivl_of(a)
        return lo if lo == hi and not (isinstance(a, Term) and a.sort == BOOL) else None

    def _count_affine(self, a: Any) -> tuple[Term, int, int] | None:
        """(mask, sign, offset) when a = sign * count(mask) + offset for a set with unary
        counts and a constant offset (NOTE(unary-counts)), else None."""
        if not isinstance(a, Term):
            return None
        if a.op == "popcount":
            return (a.args[0], 1, 0) if self._ones(a.args[0]) is not None else None
        if a.op not in ("add", "sub"):
            return None
        x, y = a.args
        for count, other, sign in ((x, y, 1), (y, x, -1 if a.op == "sub" else 1)):
            if isinstance(count, Term) and count.op == "popcount" and self._ones(count.args[0]) is not None:
                c = self._constant(other)
                if c is not None:
                    if sign == 1 and a.op == "sub":  # count - c
                        return count.args[0], 1, -c
                    return count.args[0], sign, c
        return None

    def _count_compare(self, op: str, a: Any, b: Any) -> Any:
        """A comparison of count(mask) with a constant, in unary (NOTE(unary-counts)), or None."""
        flip = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
        if isinstance(b, Term) and b.op == "popcount" and not (isinstance(a, Term) and a.op == "popcount"):
            a, b, op = b, a, flip[op]
        if not (isinstance(a, Term) and a.op == "popcount"):
            return None
        c = self._constant(b)
        ones = self._ones(a.args[0])
        if c is None or ones is None:
            return None
        n = len(ones) - 1
        if op == "eq":
            return self._exactly(ones, n, c)
        if op == "ne":
            return z3.Not(self._exactly(ones, n, c))
        at_least = {"ge": c, "gt": c + 1, "lt": c, "le": c + 1}[op]
        e = self._at_least(ones, n, at_least)
        return e if op in ("ge", "gt") else z3.Not(e)

    # -- bindings and the transition relation -------------------------------------------------

    def _binding(self, t: Any) -> _Binding:
        guards = [self.as_bool(self.val(g)) for g in t.guard]
        guard = z3.And(guards) if guards else z3.BoolVal(True)
        flags: dict[str, list[Any]] = {}
        skip: frozenset[str] = self.model.skip
        for prop, cond, _ in t.flags:
            if prop not in skip:  # `--skip PROPERTY`: as the concrete interpreter drops its flags
                flags.setdefault(prop, []).append(self.as_bool(self.val(cond)))
        # each possible spec error, where the guards before it hold (Traced.errors)
        errors: list[Any] = []
        for before, cond, _ in t.errors():
            c = self.as_bool(self.val(cond))
            errors.append(z3.And(*[self.as_bool(self.val(g)) for g in before], c) if before else c)
        writes: dict[int, Any] = {}
        for i, value in t.writes.items():
            e = self.val(value)
            writes[i] = self.as_bool(e) if self.slot_of[i].is_bool else self.as_bv(e)
        return _Binding(
            guard=guard,
            flags={p: z3.Or(cs) for p, cs in flags.items()},
            error=z3.Or(errors) if errors else z3.BoolVal(False),
            writes=writes,
        )

    def _transition(self) -> Any:
        """T(x, act, y): `act` names a binding enabled in x that raises no spec error there, and
        y is its successor (the concrete interpreter's step)."""
        n = len(self.bindings)
        chosen = [self.act == b for b in range(n)]
        enabled = z3.Or([z3.And(chosen[b], self.bindings[b].guard, z3.Not(self.bindings[b].error))
                         for b in range(n)]) if n else z3.BoolVal(False)
        frame = []
        for i in range(self.model.width):
            value = self.x[i]
            for b in reversed(range(n)):
                w = self.bindings[b].writes.get(i)
                if w is not None:
                    value = z3.If(chosen[b], w, value)
            frame.append(self.y[i] == value)
        return z3.simplify(z3.And(z3.ULT(self.act, n), enabled, *frame))

    def footprints(self) -> list[tuple[set[int], set[int]]]:
        """For each binding, the slots it reads as a step and the slots it writes (NOTE(footprints))."""
        if self._footprints is not None:
            return self._footprints
        width = self.model.width

        def reads_of(roots: list[Any]) -> set[int]:
            return {t.args[0] for t in _postorder(roots) if t.op == "var" and t.args[0] < width}

        solver = z3.SolverFor("QF_BV")
        solver.set("rlimit", FOOTPRINT_RLIMIT)
        solver.add(self.domain(self.x), self.param_ranges())
        out: list[tuple[set[int], set[int]]] = []
        for binding, action in zip(self.bindings, self._actions):
            solver.push()
            solver.add(binding.guard, z3.Not(binding.error))
            if solver.check() == z3.unsat:  # never a step: it reads and writes nothing
                solver.pop()
                out.append((set(), set()))
                continue
            wrote: set[int] = set()
            for i, value in binding.writes.items():
                if z3.eq(z3.simplify(value), self.x[i]):
                    continue
                if solver.check(value != self.x[i]) != z3.unsat:  # (unknown counts as a write)
                    wrote.add(i)
            solver.pop()
            out.append((reads_of([e.cond for e in action.events] + [action.writes[i] for i in sorted(wrote)]), wrote))
        self._footprints = out
        return out

    def commuting(self) -> list[frozenset[int]]:
        """For each binding a, the bindings b that commute with it as steps: from any in-domain
        state where a then b can be taken (enabled, raising no spec error), b then a can be
        taken too and reach the same state, and the other way round (bmc's NOTE(canonical-order)):
        neither writes a slot that the other reads or writes (NOTE(footprints))."""
        fp = self.footprints()
        n = len(fp)
        return [frozenset(b for b in range(n) if b != a and not fp[a][1] & (fp[b][0] | fp[b][1])
                          and not fp[b][1] & fp[a][0])
                for a in range(n)]

    # -- properties as templates -----------------------------------------------------------------

    def step_props(self) -> list[str]:
        """The kernel properties that some binding can flag."""
        seen: list[str] = []
        for b in self.bindings:
            for p in b.flags:
                if p not in seen:
                    seen.append(p)
        return seen

    def _cached(self, key: tuple[Any, ...], make: Any) -> Any:
        got = self._templates.get(key)
        if got is None:
            got = self._templates[key] = z3.simplify(make())
        return got

    def _violation(self, b: _Binding, wanted: set[str] | None) -> Any:
        conds = [c for p, c in b.flags.items() if wanted is None or p in wanted]
        if not conds:
            return z3.BoolVal(False)
        return z3.And(b.guard, z3.Not(b.error), z3.Or(conds))

    def step_violation(self, props: Iterable[str] | None = None) -> Any:
        """Over x and act: the chosen binding is enabled, raises no spec error, and flags a
        kernel property of `props` (all if None)."""
        wanted = None if props is None else tuple(props)
        return self._cached(("step", wanted), lambda: z3.Or(
            [z3.And(self.act == i, self._violation(b, None if wanted is None else set(wanted)))
             for i, b in enumerate(self.bindings)] or [z3.BoolVal(False)]))

    #: confirm_trace and older callers: a step's violation of `props`
    step_bad = step_violation

    def any_step_error(self) -> Any:
        """Over x alone: SOME binding raises a spec error."""
        return self._cached(("step-error",), lambda: z3.Or([b.error for b in self.bindings] or [z3.BoolVal(False)]))

    def any_step_bad(self) -> Any:
        """Over x alone: SOME binding raises a flag or a spec error (the induction step's bad)."""
        return self._cached(("any-step",), lambda: z3.Or(
            [z3.Or(b.error, self._violation(b, None)) for b in self.bindings] or [z3.BoolVal(False)]))

    def _fails(self, wanted: tuple[str, ...] | None, lemmas: bool) -> Any:
        parts = [z3.Not(c) for name, c in self.invariants if wanted is None or name in wanted]
        if lemmas:
            parts += [z3.Not(c) for name, c in self.lemmas if wanted is None or name in wanted]
        if wanted is None or "leak" in wanted:
            parts.append(self.leak)
        return z3.Or(parts) if parts else z3.BoolVal(False)

    def state_error(self, *, lemmas: bool = False) -> Any:
        """Over x: a state property (with `lemmas`, also a lemma) raises a spec error."""
        return self._cached(("state-error", lemmas),
                            lambda: z3.Or(self.state_errors, self.lemma_errors) if lemmas else self.state_errors)

    def state_violation(self, props: Iterable[str] | None = None, *, lemmas: bool = False) -> Any:
        """Over x: no property raises a spec error, and an invariant (or lemma) of `props` fails
        or the kernel's leak property is violated."""
        wanted = None if props is None else tuple(props)
        return self._cached(("state", wanted, lemmas),
                            lambda: z3.And(z3.Not(self.state_error(lemmas=lemmas)), self._fails(wanted, lemmas)))

    def state_bad(self, props: Iterable[str] | None = None, *, lemmas: bool = False) -> Any:
        """Over x: a property fails or raises a spec error (the induction step's bad)."""
        wanted = None if props is None else tuple(props)
        return self._cached(("state-bad", wanted, lemmas),
                            lambda: z3.Or(self.state_error(lemmas=lemmas), self._fails(wanted, lemmas)))

    def holds(self, name: str) -> Any:
        """Over x: the sometimes-property `name` holds."""
        return self._cached(("sometimes", name), lambda: dict(self.sometimes)[name])

    def enabled(self, b: int) -> Any:
        """Over x: binding b is enabled (where no step raises a spec error: a settled depth)."""
        return self.bindings[b].guard

    def dead_end(self) -> Any:
        """Over x: no binding is enabled, and none raises a spec error: the run stops there."""
        return self._cached(("dead-end",), lambda: z3.And(
            [z3.And(z3.Not(b.guard), z3.Not(b.error)) for b in self.bindings] or [z3.BoolVal(True)]))

    def same(self, a: Sequence[Any], b: Sequence[Any]) -> Any:
        """States a and b are equal."""
        return z3.And([x == y for x, y in zip(a, b)])

    def domain(self, state: Sequence[Any]) -> Any:
        """Every slot of `state` within its domain (booleans are z3 Bools already)."""
        parts = []
        for i, s in enumerate(self.slot_of):
            if not s.is_bool:
                parts.append(z3.And(state[i] >= s.lo, state[i] <= s.hi))
        return z3.And(parts)

    def param_ranges(self) -> Any:
        return z3.And([z3.And(self.param_vars[i] >= p.lo, self.param_vars[i] <= p.hi) for i, p in self.params.items()])

    def equals(self, state: Sequence[Any], values: Sequence[int]) -> Any:
        """`state` holds the concrete `values`."""
        parts = []
        for i, v in enumerate(values):
            parts.append(state[i] == z3.BoolVal(bool(v)) if self.slot_of[i].is_bool else state[i] == z3.BitVecVal(v, self.W))
        return z3.And(parts)

    def at(self, expr: Any, pre: Sequence[Any], act: Any = None, post: Sequence[Any] | None = None) -> Any:
        """A template instantiated at the given state (and selector, and post-state) variables."""
        pairs = list(zip(self.x, pre))
        if act is not None:
            pairs.append((self.act, act))
        if post is not None:
            pairs += list(zip(self.y, post))
        return z3.substitute(expr, *pairs)

    # -- reading a model ------------------------------------------------------------------------

    def decode(self, zmodel: Any, state: Sequence[Any]) -> tuple[int, ...]:
        """The concrete state that a z3 model gives to `state`."""
        out = []
        for e in state:
            got = zmodel.eval(e, model_completion=True)
            out.append(1 if z3.is_true(got) else 0 if z3.is_bool(got) else got.as_signed_long())
        return tuple(out)

    def decode_act(self, zmodel: Any, act: Any) -> int:
        return zmodel.eval(act, model_completion=True).as_long()

    def decode_params(self, zmodel: Any) -> dict[str, int]:
        return {p.name: zmodel.eval(self.param_vars[i], model_completion=True).as_signed_long()
                for i, p in self.params.items()}

    def block_params(self, values: dict[str, int]) -> Any:
        """Rule out exactly this assignment of the symbolic parameters."""
        return z3.Or([self.param_vars[i] != values[p.name] for i, p in self.params.items()])


def encode(model: Model, *, symbolic: Sequence[SymbolicParam] = (), lemmas: bool = False) -> Encoding:
    """Trace `model` (with the given parameters symbolic) and encode it for z3."""
    traced_model, traced, by_index = trace_parametric(model, symbolic)
    lemma_graphs = trace_lemmas(traced_model) if lemmas else ([], [])
    return Encoding(model, traced, params=by_index, lemmas=lemma_graphs)


__all__ = [
    "SPEC_ERROR", "Encoding", "LiveObligation", "SymbolicParam", "check_layout", "encode", "parse_symbolic",
    "trace_lemmas", "trace_parametric",
]
