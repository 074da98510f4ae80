"""Random specs for differential testing: a Hypothesis strategy that writes spec source text.

`specs()` draws a whole spec (a Python module with one `Spec` class) and returns it as a
`GeneratedSpec`: the source, the parameters and fixes to check it at, and the lines where it
seeds a spec error that the reference interpreter must raise whenever it runs that line. The
test writes the source to a file and loads it with ownership's own loader, as a user's spec.

What a spec may contain (docs/spec-language.md): 1 to 3 requests; one or two pools of 1 to
4 pages (lowest or lifo order, warm, shared, keyed); a per-request stage (an IntEnum) and
int, bool and page-set slots per request, a scalar slot, a per-page slot and an array;
actions guarded by `s.require`, with arithmetic, `Min`/`Max`, `If`, `&`, `|`, `~`, the
page-set helpers, every kernel operation (spelled `s.op(...)` or `s.kernel.op(...)`, and
transfers that land or fail, `s.kernel.fail`), reads of slots written earlier in the same action,
overwritten slots, and Python `if` on fixes and action arguments; invariants, `sometimes`
properties and a `finished` hook (the kernel's leak property); liveness: weakly and strongly
fair actions, an `@eventually` or `@leads_to` property (with a bound `within=N` or not) and the
kernel's eventually-released or eventually-landed; a `@measure`.

Every spec is WELL-SORTED, under the rules the interpreters are being changed to enforce:
- a condition is a comparison, a bool slot, `&`, `|`, `~` of conditions, has(...), holds(...),
  in_flight(...) or a Python True/False; `~` is applied only to values that are state values
  in every interpreter (never to a Python bool, where it is -2), and Python `not`/`if` only to
  values known when tracing (parameters, fixes, action arguments, literals);
- an action argument declared bool is a condition (True or False), known when tracing;
- ints come from int and enum slots, arguments, parameters, literals and arithmetic on ints;
- page sets come from page-set slots, page(p), first, without, owned, free_pages, reused,
  alloc, `&`/`|` of page sets and the literal 0; count(pages) is an int;
- a slot is written only with values of its sort (bool slots with conditions, ...).

A fraction of the specs (the "error family") also contains spec errors that the concrete
interpreter raises at run time: division or modulo by a value that can be zero, an index
or an `alloc` count that can be out of range, a value outside its slot's domain written and
overwritten later in the same action, a page outside its pool, a request that does not exist
and a key outside 1..K given to a kernel operation. The lines of the errors that must stop
the reference whenever it runs them are recorded in `GeneratedSpec.seeded`, so that a test
can see that the reference raises them (it did not raise pages and keys out of range before
210c03e). A spec error that depends only on constants is always seeded (never conditional),
since the loader may refuse it at load wherever it is.

Choices are ordered simplest first, so that Hypothesis shrinks a failing spec towards fewer
pools, slots, actions and statements and smaller expressions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from ownership.lang.properties import OPERATIONS

BOOL = "bool"
INT = "int"


def PAGES(pool: str) -> tuple[str, str]:
    """The sort of a set of pages of `pool`."""
    return ("pages", pool)


#: Seeded spec errors that the concrete interpreter must raise whenever it runs their line.
SEEDED_KINDS = {
    "page": "a page outside its pool given to a kernel operation",
    "key": "a key outside 1..K given to write or read of a keyed pool",
    "domain": "a value outside its slot's domain, written (and overwritten later in the action)",
    "alloc": "alloc of a negative number of pages",
    "request": "a request id outside 1..requests given to a kernel operation",
}

#: Everything the generator may use; `specs(features=...)` can leave some out (to look for
#: one kind of disagreement at a time), the tests use all of them.
FEATURES = frozenset({
    "lifo", "warm", "shared", "keys", "two-pools", "pool-param", "limit-param", "derived-param", "fixes",
    "int-slots", "bool-slots", "page-slots", "scalar", "per-page", "array", "extra-args",
    "static-if", "locals", "arithmetic", "division", "modulo", "if", "bits", "request-slots", "lemmas", "loops", "select", "nth", "negation",
    "kernel", "send", "take", "share", "invariants", "sometimes", "finished", "errors",
    "dynamic-index", "literal-request", "liveness", "per-request-invariant", "crash", "partial-landing", "keyed-send",
    "counted", "owners", "pins", "kernel-namespace", "fail",
})

#: A call of a kernel operation on the state, as the generator writes it (`s.alloc(`).
_KERNEL_CALL = re.compile(r"\bs\.(" + "|".join(OPERATIONS) + r")\(")


@dataclass(frozen=True)
class Expr:
    """A generated expression: its text and what the generator knows about its value.

    `static`: known when tracing in every interpreter (literals, parameters, arguments and
    operations on them only): Python control flow on it is allowed. `state`: a value of the
    interpreter in every interpreter (a slot read, or an operation involving one that every
    interpreter wraps): `~` on it is logical negation. An `If` with Python branches is neither
    (the concrete interpreter returns the chosen branch itself). `lo..hi`: every value an
    int can take (for domains and divisors); a page set's bits; 0..1 for a condition."""

    text: str
    sort: Any
    static: bool = False
    state: bool = True
    lo: int = 0
    hi: int = 1
    #: the literal 0 as an empty page set, or `|`/`&` of such: a plain Python int, which is a
    #: page set only where one is expected (so `If(c, 0, 0)` is an integer, not a page set)
    plain_zero: bool = False


def _lit(v: int) -> Expr:
    return Expr(str(v), INT, True, False, v, v)


def _if_state(c: Expr, a: Expr, b: Expr) -> bool:
    """Whether If(c, a, b) is a state value in every interpreter: with a state condition it is
    (one value semantics, 210c03e and d992421); with a Python condition it is the branch itself."""
    return c.state or (a.state and b.state)


@dataclass(frozen=True)
class PoolDecl:
    """A generated pool."""

    name: str
    pages: int
    order: str = "lowest"
    warm: bool = False
    shared: bool = False
    keys: int | None = None
    sized_by: str | None = None   # the parameter giving its size, if any
    counted: int | None = None    # references per holder (a counted shared pool)
    owners: tuple[str, ...] = ()  # holders that are not requests
    pins: bool = False

    def most(self) -> int:
        """The most references (or pins) one holder may have on a page."""
        return self.counted or 1

    @property
    def mask(self) -> int:
        return (1 << self.pages) - 1

    def declaration(self) -> str:
        opts = [self.sized_by or str(self.pages)]
        if self.order != "lowest":
            opts.append(f'order="{self.order}"')
        if self.warm:
            opts.append("warm=True")
        if self.shared:
            opts.append("shared=True")
        if self.keys is not None:
            opts.append(f"keys={self.keys}")
        if self.counted is not None:
            opts.append(f"counted={self.counted}")
        if self.owners:
            opts.append(f"owners={self.owners!r}")
        if self.pins:
            opts.append("pins=True")
        return f"{self.name} = pool({', '.join(opts)})"


@dataclass(frozen=True)
class SlotDecl:
    """A generated state slot: its shape, the sort and domain of its elements."""

    name: str
    shape: str                  # "request" | "scalar" | "page" | "array"
    sort: Any                   # BOOL, INT or PAGES(pool)
    lo: int                     # the domain of an element
    hi: int
    domain: str                 # the domain as the spec writes it
    init: str                   # the initial value as the spec writes it
    enum: bool = False          # an IntEnum slot (the stage)
    over: str | None = None     # shape "page": the pool it is indexed by
    first: int = 0              # the first index (shape "page": 0, "array": 1, "request": 1)
    last: int = 0               # the last index

    def declaration(self) -> str:
        if self.shape == "request":
            return f"{self.name} = per_request({self.domain}, {self.init})"
        if self.shape == "scalar":
            return f"{self.name} = state({self.domain}, {self.init})"
        if self.shape == "page":
            return f"{self.name} = per_page({self.over}, {self.domain}, {self.init})"
        return f"{self.name} = array(ints({self.first}, {self.last}), {self.domain}, {self.init})"


@dataclass
class Scope:
    """What an expression may refer to where it is generated."""

    req: str | None                 # the request of this action or loop ("r", "q"), if any
    args: list[Expr] = field(default_factory=list)   # action arguments (static ints)
    locals: list[tuple[str, Expr]] = field(default_factory=list)
    partial: bool = False           # may divide by zero or index out of range (error family)
    seeded: bool = False            # may seed page and key errors (error family, in actions)


@dataclass
class GeneratedSpec:
    """A generated spec: its source, how to check it, and what the generator seeded in it."""

    source: str
    params: dict[str, int]
    fixes: list[str]
    #: line -> kind (SEEDED_KINDS) of a seeded error the reference must raise on that line
    seeded: dict[int, str] = field(default_factory=dict)
    errors: bool = False            # of the error family

    @property
    def digest(self) -> str:
        text = repr((self.source, sorted(self.params.items()), self.fixes))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def write(self, directory: Path, stem: str | None = None) -> Path:
        """Write the source under `directory` (a name from its content unless `stem`)."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{stem or 'gen_' + self.digest}.py"
        if not path.exists() or path.read_text() != self.source:
            path.write_text(self.source)
        return path

    def options(self) -> str:
        """The command-line options that check it at its parameters and fixes."""
        parts = [f"--param {k}={v}" for k, v in sorted(self.params.items())]
        parts += [f"--fix {f.replace('_', '-')}" for f in self.fixes]
        return " ".join(parts)


# --------------------------------------------------------------------------- the writer


class _Writer:
    """Draws one spec: declarations first, then actions and properties, as source lines."""

    def __init__(self, draw: Callable[[Any], Any], features: frozenset[str], errors: bool | None,
                 liveness: bool = False) -> None:
        self.draw = draw
        self.features = features
        self.force_errors = errors
        self.force_liveness = liveness
        self.lines: list[str] = []          # the class body, indented by the writer
        self.seeded: dict[int, str] = {}    # index in self.lines -> kind
        self.indent = 1
        self.fresh = 0

    # -- drawing ------------------------------------------------------------------------------

    def has(self, feature: str) -> bool:
        return feature in self.features

    def int_in(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def chance(self, one_in: int) -> bool:
        """True with probability 1/one_in; shrinks to False."""
        return self.draw(st.integers(0, one_in - 1)) == one_in - 1

    def pick(self, options: Sequence[Any]) -> Any:
        """One of `options`; shrinks towards the first."""
        return options[self.draw(st.integers(0, len(options) - 1))]

    def choose(self, options: list[tuple[str, Callable[[], Any]]]) -> Any:
        """Run one of the available constructions; shrinks towards the first."""
        return self.pick(options)[1]()

    def name(self, base: str) -> str:
        self.fresh += 1
        return f"{base}{self.fresh}"

    def emit(self, text: str, seeded: str | None = None) -> None:
        if seeded is not None:
            self.seeded[len(self.lines)] = seeded
        if self.has("kernel-namespace") and len(self.lines) % 2:
            # every other line calls the kernel as s.kernel.<op> (NOTE(kernel-namespace)); no
            # draw decides it, so a seed draws the same specs as before the spelling existed
            text = _KERNEL_CALL.sub(r"s.kernel.\1(", text)
        self.lines.append("    " * self.indent + text if text else "")

    # -- declarations -------------------------------------------------------------------------

    def declarations(self) -> None:
        self.requests = self.int_in(1, 3)
        self.errors = self.force_errors if self.force_errors is not None else self.has("errors") and self.chance(4)
        self.params: dict[str, int] = {"requests": self.requests}
        self.stages = self.int_in(2, 4)
        self.limit: int | None = None
        if self.has("limit-param") and self.chance(3):
            self.limit = self.int_in(0, 3)
            self.params["limit"] = self.limit
        #: a derived parameter (param(limit + k, ...)): its value, and whether it is given one
        self.derived: tuple[int, int, bool] | None = None  # (k, value, given)
        if self.limit is not None and self.has("derived-param") and self.chance(2):
            k = self.int_in(0, 2)
            given = self.chance(3)
            value = self.int_in(0, 4) if given else self.limit + k
            self.derived = (k, value, given)
            if given:
                self.params["limit2"] = value
        self.fixes: list[str] = []
        self.enabled: list[str] = []
        if self.has("fixes"):
            for _ in range(self.int_in(0, 2)):
                fx = f"fix_{'ab'[len(self.fixes)]}"
                self.fixes.append(fx)
                if self.draw(st.booleans()):
                    self.enabled.append(fx)
        self.pools: dict[str, PoolDecl] = {}
        for name in ["kv", "dst"][: 2 if self.has("two-pools") and self.chance(3) else 1]:
            self.pools[name] = self.pool(name)
        self.slots: list[SlotDecl] = [SlotDecl(
            "stage", "request", INT, 0, self.stages - 1, "Stage", "Stage.S0", enum=True, first=1,
            last=self.requests)]
        if self.has("page-slots") and self.draw(st.booleans()):
            pool = self.pick(list(self.pools))
            self.slots.append(SlotDecl("table", "request", PAGES(pool), 0, self.pools[pool].mask, pool, "0",
                                       first=1, last=self.requests))
        for _ in range(self.int_in(0, 3)):
            slot = self.slot()
            if slot is not None:
                self.slots.append(slot)

    def pool(self, name: str) -> PoolDecl:
        pages = self.int_in(1, 4)
        kind = self.pick([k for k in ("plain", "lifo", "shared", "keyed", "shared-keyed")
                          if k == "plain" or (k == "lifo" and self.has("lifo"))
                          or (k == "shared" and self.has("shared"))
                          or (k == "keyed" and self.has("keys"))
                          or (k == "shared-keyed" and self.has("shared") and self.has("keys"))])
        warm = self.has("warm") and self.chance(3)
        sized_by = None
        if self.has("pool-param") and self.chance(6):
            sized_by = f"{name}_pages"
            self.params[sized_by] = pages
        keys = self.int_in(1, 2) if "keyed" in kind else None
        shared = kind.startswith("shared")
        counted = self.int_in(1, 2) if shared and self.has("counted") and self.chance(2) else None
        owners = ("cache",) if shared and self.has("owners") and self.chance(2) else ()
        pins = shared and self.has("pins") and self.chance(2)
        return PoolDecl(name, pages, "lifo" if kind == "lifo" else "lowest", warm,
                        shared, keys, sized_by, counted, owners, pins)

    def slot(self) -> SlotDecl | None:
        kinds = [k for k, f in (("int", "int-slots"), ("bool", "bool-slots"), ("pages", "page-slots"),
                                ("request", "request-slots")) if self.has(f)]
        shapes = ["request"] + [s for s, f in (("scalar", "scalar"), ("page", "per-page"), ("array", "array"))
                                if self.has(f)]
        if not kinds:
            return None
        kind, shape = self.pick(kinds), self.pick(shapes)
        name = self.name({"int": "n", "bool": "ok", "pages": "held", "request": "who"}[kind])
        first, last, over = 1, self.requests, None
        if shape == "page":
            over = self.pick(list(self.pools))
            first, last = 0, self.pools[over].pages - 1
        elif shape == "array":
            first, last = 1, self.int_in(1, 2)
        elif shape == "scalar":
            first = last = 0
        if kind == "bool":
            return SlotDecl(name, shape, BOOL, 0, 1, "bool", "False", over=over, first=first, last=last)
        if kind == "request":  # a request id 1..requests (renamed by symmetry)
            # per request, each starts as itself: renaming the requests leaves the initial state alone
            init = "lambda q: q" if shape == "request" else "1"
            return SlotDecl(name, shape, INT, 1, self.requests, "Request", init, over=over, first=first, last=last)
        if kind == "pages":
            pool = self.pick(list(self.pools))
            return SlotDecl(name, shape, PAGES(pool), 0, self.pools[pool].mask, pool, "0", over=over,
                            first=first, last=last)
        lo = self.pick([0, -1])
        if self.limit is not None and self.chance(3):
            hi, domain = self.limit, f"ints({lo}, limit)"
        else:
            hi = self.int_in(1, 3)
            domain = f"ints({lo}, {hi})"
        init = "0"
        if shape == "page" and self.chance(3):
            init = "lambda p: p % 2" if hi >= 1 else "0"
        return SlotDecl(name, shape, INT, lo, hi, domain, init, over=over, first=first, last=last)

    # -- expressions: ints --------------------------------------------------------------------

    def int_expr(self, scope: Scope, depth: int = 2) -> Expr:
        options: list[tuple[str, Callable[[], Expr]]] = [("literal", lambda: _lit(self.int_in(-1, 3)))]
        reads = self._reads(scope, lambda s: s.sort == INT)
        if reads:
            options.append(("read", lambda: self.read(self.pick(reads), scope)))
        if scope.args:
            options.append(("argument", lambda: self.pick(scope.args)))
        if scope.req is not None and self.has("request-slots"):
            # the request as a number (an action argument): symmetry must refuse it where it matters
            options.append(("request id", lambda: Expr(scope.req, INT, True, False, 1, self.requests)))
        ints = [e for _, e in scope.locals if e.sort == INT]
        if ints:
            options.append(("local", lambda: self.pick(ints)))
        params = [Expr("self.requests", INT, True, False, self.requests, self.requests)]
        if self.limit is not None:
            params.append(Expr("self.limit", INT, True, False, self.limit, self.limit))
        if self.derived is not None:
            params.append(Expr("self.limit2", INT, True, False, self.derived[1], self.derived[1]))
        options.append(("parameter", lambda: self.pick(params)))
        if depth > 0:
            d = depth - 1
            if self.has("arithmetic"):
                options.append(("arithmetic", lambda: self.arith(scope, d)))
                options.append(("min-max", lambda: self.min_max(scope, d)))
                options.append(("negative", lambda: self.minus(scope, d)))
            if self.has("bits"):
                options.append(("shift", lambda: self.shift(scope, d)))
                options.append(("bitwise", lambda: self.bitwise(scope, d)))
            if self.has("division"):
                options.append(("division", lambda: self.division(scope, d)))
            if self.has("if"):
                options.append(("if", lambda: self.if_int(scope, d)))
            options.append(("count", lambda: self.count(scope, d)))
            if self.has("kernel") and any(p.shared for p in self.pools.values()) and self.has("counted"):
                options.append(("refs", lambda: self.refs(scope)))
            if self.has("nth"):
                options.append(("nth", lambda: self.nth(scope, d)))
            if self.has("select"):
                options.append(("select", lambda: self.select(scope, d)))
        return self.choose(options)

    def arith(self, scope: Scope, depth: int) -> Expr:
        a, b = self.int_expr(scope, depth), self.int_expr(scope, depth)
        op = self.pick(["+", "-", "*"])
        corners = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
        lo, hi = {"+": (a.lo + b.lo, a.hi + b.hi), "-": (a.lo - b.hi, a.hi - b.lo),
                  "*": (min(corners), max(corners))}[op]
        return Expr(f"({a.text} {op} {b.text})", INT, a.static and b.static, a.state or b.state, lo, hi)

    def minus(self, scope: Scope, depth: int) -> Expr:
        a = self.int_expr(scope, depth)
        return Expr(f"(-{a.text})", INT, a.static, a.state, -a.hi, -a.lo)

    def shift(self, scope: Scope, depth: int) -> Expr:
        """`a << n` or `a >> n`: n is 0..2 unless the spec is of the error family, where a state
        value may be negative (a spec error where it is)."""
        a = Expr(f"Min(Max({(e := self.int_expr(scope, depth)).text}, -3), 3)", INT, e.static, e.state, -3, 3)
        n = self.int_expr(scope, depth)
        if not (0 <= n.lo and n.hi <= 2) and not (scope.partial and not n.static):
            n = Expr(f"Min(Max({n.text}, 0), 2)", INT, n.static, n.state, 0, 2)
        op = self.pick(["<<", ">>"])
        counts = [max(n.lo, 0), max(min(n.hi, 2), 0)]
        vals = [x << k if op == "<<" else x >> k for x in (a.lo, a.hi) for k in counts]
        return Expr(f"({a.text} {op} {n.text})", INT, a.static and n.static, a.state or n.state, min(vals), max(vals))

    def bitwise(self, scope: Scope, depth: int) -> Expr:
        """`&`, `|`, `^` of two non-negative ints (bitwise)."""
        a, b = self.int_expr(scope, depth), self.int_expr(scope, depth)
        if a.lo < 0:
            a = Expr(f"Max({a.text}, 0)", INT, a.static, a.state, 0, max(a.hi, 0))
        if b.lo < 0:
            b = Expr(f"Max({b.text}, 0)", INT, b.static, b.state, 0, max(b.hi, 0))
        op = self.pick(["&", "|", "^"])
        top = (1 << max(a.hi.bit_length(), b.hi.bit_length())) - 1
        return Expr(f"({a.text} {op} {b.text})", INT, a.static and b.static, a.state or b.state, 0, top)

    def min_max(self, scope: Scope, depth: int) -> Expr:
        a, b = self.int_expr(scope, depth), self.int_expr(scope, depth)
        fn = self.pick(["Min", "Max"])
        lo, hi = (min(a.lo, b.lo), min(a.hi, b.hi)) if fn == "Min" else (max(a.lo, b.lo), max(a.hi, b.hi))
        return Expr(f"{fn}({a.text}, {b.text})", INT, a.static and b.static, a.state or b.state, lo, hi)

    def division(self, scope: Scope, depth: int) -> Expr:
        """`a // b` or `a % b`: b is never 0 unless the spec is of the error family."""
        a = self.int_expr(scope, depth)
        op = self.pick(["//", "%"] if self.has("modulo") else ["//"])
        b = self.int_expr(scope, depth)
        if b.static and b.lo == b.hi == 0:
            b = _lit(2)  # a literal 0 divides at trace time: a load error, not a run-time one
        if b.lo <= 0 <= b.hi and not (scope.partial and not b.static):
            b = Expr(f"Max({b.text}, 1)", INT, b.static, False, max(b.lo, 1), max(b.hi, 1))
        divisors = [v for v in (b.lo, -1, 1, b.hi) if b.lo <= v <= b.hi and v != 0]
        if not divisors:  # always 0 (error family): the division always raises
            return Expr(f"({a.text} {op} {b.text})", INT, False, True, 0, 0)
        if op == "//":
            vals = [x // y for x in (a.lo, a.hi) for y in divisors]
            lo, hi = min(vals), max(vals)
        else:
            big = max(abs(v) for v in divisors)
            lo, hi = (-(big - 1), big - 1)
        return Expr(f"({a.text} {op} {b.text})", INT, a.static and b.static, a.state or b.state, lo, hi)

    def if_int(self, scope: Scope, depth: int) -> Expr:
        c, a, b = self.cond(scope, depth), self.int_expr(scope, depth), self.int_expr(scope, depth)
        return Expr(f"If({c.text}, {a.text}, {b.text})", INT, c.static and a.static and b.static,
                    _if_state(c, a, b), min(a.lo, b.lo), max(a.hi, b.hi))

    def count(self, scope: Scope, depth: int) -> Expr:
        pool = self.pick(list(self.pools))
        p = self.pages(scope, pool, depth)
        return Expr(f"count({p.text})", INT, p.static, p.state, 0, self.pools[pool].pages)

    def nth(self, scope: Scope, depth: int) -> Expr:
        pool = self.pick(list(self.pools))
        p = self.pages(scope, pool, depth)
        j = self.int_expr(scope, 0)
        return Expr(f"nth({p.text}, {j.text})", INT, p.static and j.static, p.state or j.state,
                    -1, self.pools[pool].pages - 1)

    def select(self, scope: Scope, depth: int) -> Expr:
        values = [self.int_expr(scope, 0) for _ in range(self.int_in(1, 3))]
        idx = self.int_expr(scope, depth)
        text = f"select([{', '.join(v.text for v in values)}], {idx.text})"
        return Expr(text, INT, idx.static and all(v.static for v in values),
                    idx.state or all(v.state for v in values),
                    min([0] + [v.lo for v in values]), max([0] + [v.hi for v in values]))

    # -- expressions: conditions --------------------------------------------------------------

    def cond(self, scope: Scope, depth: int = 2) -> Expr:
        options: list[tuple[str, Callable[[], Expr]]] = [
            ("literal", lambda: Expr(self.pick(["True", "False"]), BOOL, True, False)),
            ("compare", lambda: self.compare(scope, max(depth - 1, 0))),
        ]
        reads = self._reads(scope, lambda s: s.sort == BOOL)
        if reads:
            options.append(("read", lambda: self.read(self.pick(reads), scope)))
        bools = [e for _, e in scope.locals if e.sort == BOOL]
        if bools:
            options.append(("local", lambda: self.pick(bools)))
        options.append(("has", lambda: self.has_page(scope, max(depth - 1, 0))))
        if scope.req is not None and self.has("kernel"):
            options.append(("holds", lambda: self.holds(scope)))
            options.append(("in-flight", lambda: Expr(f"s.in_flight({scope.req})", BOOL)))
        if depth > 0:
            d = depth - 1
            options.append(("and-or", lambda: self.junction(scope, d)))
            if self.has("negation"):
                options.append(("not", lambda: self.negation(scope, d)))
            if self.has("if"):
                options.append(("if", lambda: self.if_cond(scope, d)))
            if self.has("bits"):
                options.append(("equal conditions", lambda: self.equal_conds(scope, d)))
            options.append(("all-any", lambda: self.all_any(scope, d)))
        return self.choose(options)

    def if_cond(self, scope: Scope, depth: int) -> Expr:
        c, a, b = self.cond(scope, depth), self.cond(scope, depth), self.cond(scope, depth)
        return Expr(f"If({c.text}, {a.text}, {b.text})", BOOL, c.static and a.static and b.static,
                    _if_state(c, a, b))

    def equal_conds(self, scope: Scope, depth: int) -> Expr:
        """`a == b`, `a != b` or `a ^ b` of two conditions (one of them a state value: Python's
        `True ^ False` is an int)."""
        a, b = self.cond(scope, depth), self.cond(scope, depth)
        if not (a.state or b.state):
            return a
        op = self.pick(["==", "!=", "^"])
        return Expr(f"({a.text} {op} {b.text})", BOOL, False, True)

    def all_any(self, scope: Scope, depth: int) -> Expr:
        conds = [self.cond(scope, depth) for _ in range(self.int_in(1, 3))]
        fn = self.pick(["all_of", "any_of"])
        # a fold of `&` (`|`) from True (False): a state value as soon as one operand is one
        return Expr(f"{fn}({', '.join(c.text for c in conds)})", BOOL, all(c.static for c in conds),
                    any(c.state for c in conds))

    def compare(self, scope: Scope, depth: int) -> Expr:
        who = self._reads(scope, lambda o: o.domain == "Request")
        if who and scope.req is not None and self.chance(3):
            return Expr(f"({self.read(self.pick(who), scope).text} {self.pick(['==', '!='])} {scope.req})", BOOL)
        if self.chance(4):
            pool = self.pick(list(self.pools))
            a = self.pages(scope, pool, depth)
            b = self.pick([Expr("0", PAGES(pool), True, False, 0, 0), self.pages(scope, pool, depth)])
            op = self.pick(["==", "!="])
        else:
            a, b = self.int_expr(scope, depth), self.int_expr(scope, depth)
            op = self.pick(["==", "!=", "<", "<=", ">", ">="])
        return Expr(f"({a.text} {op} {b.text})", BOOL, a.static and b.static, a.state or b.state)

    def junction(self, scope: Scope, depth: int) -> Expr:
        a, b = self.cond(scope, depth), self.cond(scope, depth)
        op = self.pick(["&", "|"])
        return Expr(f"({a.text} {op} {b.text})", BOOL, a.static and b.static, a.state or b.state)

    def negation(self, scope: Scope, depth: int) -> Expr:
        """`~c` on a state value, Python `not c` on a static one; neither on a value that may be
        either (an `If` with Python branches): that one is compared instead."""
        c = self.cond(scope, depth)
        if c.state:
            return Expr(f"(~{c.text})", BOOL, False, True)
        if c.static:
            return Expr(f"(not {c.text})", BOOL, True, False)
        return c

    def has_page(self, scope: Scope, depth: int) -> Expr:
        pool = self.pick(list(self.pools))
        p = self.pages(scope, pool, depth)
        page = self.int_in(0, self.pools[pool].pages - 1)
        return Expr(f"has({p.text}, {page})", BOOL, p.static, p.state)

    def holds(self, scope: Scope) -> Expr:
        pool = self.pick(list(self.pools))
        page = self.int_in(0, self.pools[pool].pages - 1)
        return Expr(f's.holds("{pool}", {page}, {self.holder(scope, pool)})', BOOL)

    def holder(self, scope: Scope, pool: str) -> str:
        """Who holds pages of `pool`: the action's request, or one of the pool's owners."""
        owners = self.pools[pool].owners
        if owners and self.chance(3) or scope.req is None:
            return repr(self.pick(list(owners))) if owners else str(self.int_in(1, self.requests))
        return scope.req

    def refs(self, scope: Scope) -> Expr:
        """s.references(pool, p, who): how many references a holder has on a page of a shared pool."""
        pool = self.pick([p for p in self.pools if self.pools[p].shared])
        page = self.int_in(0, self.pools[pool].pages - 1)
        return Expr(f's.references("{pool}", {page}, {self.holder(scope, pool)})', INT, hi=self.pools[pool].most())

    # -- expressions: page sets ---------------------------------------------------------------

    def pages(self, scope: Scope, pool: str, depth: int = 2) -> Expr:
        info = self.pools[pool]
        sort = PAGES(pool)
        options: list[tuple[str, Callable[[], Expr]]] = [
            ("empty", lambda: Expr("0", sort, True, False, 0, 0, plain_zero=True)),
            ("page", lambda: self.page_of(scope, pool, depth)),
        ]
        reads = self._reads(scope, lambda s: s.sort == sort)
        if reads:
            options.append(("read", lambda: self.read(self.pick(reads), scope)))
        mine = [e for _, e in scope.locals if e.sort == sort]
        if mine:
            options.append(("local", lambda: self.pick(mine)))
        wise = self._page_wise(scope, pool)
        if wise:
            options.append(("where", lambda: self.where(scope, self.pick(wise))))
        if self.has("kernel"):
            if scope.req is not None or info.owners:
                options.append(("owned", lambda: Expr(f's.owned("{pool}", {self.holder(scope, pool)})', sort,
                                                      hi=info.mask)))
            options.append(("free", lambda: Expr(f's.free_pages("{pool}")', sort, hi=info.mask)))
            if info.pins:  # (the pages anybody pins, or one holder)
                who = self.pick(["", f", {self.holder(scope, pool)}"])
                options.append(("pinned", lambda: Expr(f's.pinned_pages("{pool}"{who})', sort, hi=info.mask)))
            if info.keys is None:
                options.append(("reused", lambda: Expr(f's.reused("{pool}")', sort, hi=info.mask)))
                if scope.req is not None:
                    options.append(("written", lambda: Expr(f's.written("{pool}", {scope.req})', sort, hi=info.mask)))
            elif self.has("keyed-send"):  # (the pages of a key: a keyed pool's content)
                k = self.int_in(1, info.keys)
                options.append(("written", lambda: Expr(f's.written("{pool}", key={k})', sort, hi=info.mask)))
        if depth > 0:
            d = depth - 1
            options.append(("union", lambda: self.set_op(scope, pool, d, "|")))
            options.append(("intersection", lambda: self.set_op(scope, pool, d, "&")))
            options.append(("without", lambda: self.without(scope, pool, d)))
            options.append(("first", lambda: self.first(scope, pool, d)))
            if self.has("if"):
                options.append(("if", lambda: self.if_pages(scope, pool, d)))
        return self.choose(options)

    def _page_wise(self, scope: Scope, pool: str | None = None) -> list[SlotDecl]:
        """The per_page int and bool slots (of `pool`) that fill and where can work on."""
        return [s for s in self._reads(scope, lambda s: s.shape == "page" and not isinstance(s.sort, tuple))
                if pool is None or s.over == pool]

    def where(self, scope: Scope, slot: SlotDecl) -> Expr:
        """s.x.where(v): the pages of slot.over whose element is v (v may lie outside the domain)."""
        if slot.sort == BOOL:
            v = self.cond(scope, 1)
        else:
            v = self.int_expr(scope, 1)
        return Expr(f"s.{slot.name}.where({v.text})", PAGES(slot.over), False, True, 0,
                    self.pools[slot.over].mask)

    def fill(self, scope: Scope) -> None:
        """s.x.fill(pages, v): element p := v for each page p of the set (a page-wise write)."""
        slot = self.pick(self._page_wise(scope))
        pages = self.pages(scope, slot.over, 1)
        self.emit(f"s.{slot.name}.fill({pages.text}, {self.value_for(slot, scope).text})")

    def page_of(self, scope: Scope, pool: str, depth: int) -> Expr:
        """page(p): p a page of the pool, or (state values, with "dynamic-index") clamped into it."""
        size = self.pools[pool].pages
        if self.has("dynamic-index") and depth > 0 and self.chance(4):
            p = self.int_expr(scope, depth - 1)
            if not (0 <= p.lo and p.hi < size):
                p = Expr(f"Min(Max({p.text}, 0), {size - 1})", INT, p.static, False, 0, size - 1)
            return Expr(f"page({p.text})", PAGES(pool), p.static, p.state, 0, (1 << size) - 1)
        p = self.int_in(0, size - 1)
        return Expr(f"page({p})", PAGES(pool), True, False, 1 << p, 1 << p)

    def set_op(self, scope: Scope, pool: str, depth: int, op: str) -> Expr:
        a, b = self.pages(scope, pool, depth), self.pages(scope, pool, depth)
        return Expr(f"({a.text} {op} {b.text})", PAGES(pool), a.static and b.static, a.state or b.state,
                    0, self.pools[pool].mask, plain_zero=a.plain_zero and b.plain_zero)

    def without(self, scope: Scope, pool: str, depth: int) -> Expr:
        a, b = self.pages(scope, pool, depth), self.pages(scope, pool, depth)
        return Expr(f"without({a.text}, {b.text})", PAGES(pool), a.static and b.static, a.state or b.state,
                    0, self.pools[pool].mask)

    def first(self, scope: Scope, pool: str, depth: int) -> Expr:
        a, n = self.pages(scope, pool, depth), self.int_expr(scope, 0)
        return Expr(f"first({a.text}, {n.text})", PAGES(pool), a.static and n.static, a.state or n.state,
                    0, self.pools[pool].mask)

    def if_pages(self, scope: Scope, pool: str, depth: int) -> Expr:
        c, a, b = self.cond(scope, depth), self.pages(scope, pool, depth), self.pages(scope, pool, depth)
        if a.plain_zero and b.plain_zero:
            return a  # If(c, 0, 0) would be an integer: no page set says it is one
        return Expr(f"If({c.text}, {a.text}, {b.text})", PAGES(pool), c.static and a.static and b.static,
                    _if_state(c, a, b), 0, self.pools[pool].mask)

    # -- slot reads ---------------------------------------------------------------------------

    def _reads(self, scope: Scope, want: Callable[[SlotDecl], bool]) -> list[SlotDecl]:
        """The slots of the wanted sort that an expression here can read."""
        out = []
        for s in self.slots:
            if not want(s):
                continue
            if s.shape == "request" and scope.req is None and not self.has("literal-request"):
                continue
            out.append(s)
        return out

    def index(self, slot: SlotDecl, scope: Scope) -> str:
        """An index into `slot`: this request, a literal, an argument, or a state value."""
        if slot.shape == "request":
            if scope.req is not None and not (self.has("literal-request") and self.chance(6)):
                return scope.req
            return str(self.int_in(1, self.requests))
        options: list[tuple[str, Callable[[], str]]] = [
            ("literal", lambda: str(self.int_in(slot.first, slot.last)))]
        fits = [a for a in scope.args if slot.first <= a.lo and a.hi <= slot.last]
        if fits:
            options.append(("argument", lambda: self.pick(fits).text))
        if self.has("dynamic-index"):
            options.append(("state value", lambda: self.dynamic_index(slot, scope)))
        return self.choose(options)

    def dynamic_index(self, slot: SlotDecl, scope: Scope) -> str:
        i = self.int_expr(scope, 1)
        if (scope.partial and not i.static) or (slot.first <= i.lo and i.hi <= slot.last):
            return i.text
        return f"Min(Max({i.text}, {slot.first}), {slot.last})"

    def read(self, slot: SlotDecl, scope: Scope) -> Expr:
        if slot.shape == "scalar":
            text = f"s.{slot.name}"
        else:
            text = f"s.{slot.name}[{self.index(slot, scope)}]"
        return Expr(text, slot.sort, False, True, slot.lo, slot.hi)

    # -- statements ---------------------------------------------------------------------------

    def value_for(self, slot: SlotDecl, scope: Scope) -> Expr:
        """A value of the slot's sort, inside its domain unless this is the error family."""
        if slot.sort == BOOL:
            return self.cond(scope)
        if isinstance(slot.sort, tuple):
            return self.pages(scope, slot.sort[1])
        if slot.domain == "Request":
            return self.request_value(slot, scope)
        if slot.enum:
            options: list[tuple[str, Callable[[], Expr]]] = [
                ("member", lambda: self.stage(self.int_in(0, self.stages - 1))),
                ("if", lambda: Expr(f"If({self.cond(scope).text}, {self.stage(self.int_in(0, self.stages - 1)).text},"
                                    f" {self.stage(self.int_in(0, self.stages - 1)).text})", INT, lo=0,
                                    hi=self.stages - 1)),
                ("number", lambda: self.int_expr(scope)),
            ]
            e = self.choose(options)
        else:
            e = self.int_expr(scope)
        if slot.lo <= e.lo and e.hi <= slot.hi:
            return e
        if scope.partial and self.chance(2):
            return e
        return Expr(f"Min(Max({e.text}, {slot.lo}), {slot.hi})", INT, e.static, False, slot.lo, slot.hi)

    def request_value(self, slot: SlotDecl, scope: Scope) -> Expr:
        """A request id for a request slot: this request, another slot's, or a choice of them."""
        ids = [Expr(scope.req, INT, True, False, 1, self.requests)] if scope.req else []
        ids += [self.read(o, scope) for o in self._reads(scope, lambda o: o.domain == "Request")]
        if not ids or self.chance(6):
            ids.append(_lit(self.int_in(1, self.requests)))
        a, b = self.pick(ids), self.pick(ids)
        if a.text == b.text or not self.draw(st.booleans()):
            return a
        c = self.cond(scope, 1)
        return Expr(f"If({c.text}, {a.text}, {b.text})", INT, c.static and a.static and b.static,
                    _if_state(c, a, b), 1, self.requests)

    def stage(self, k: int) -> Expr:
        return Expr(f"Stage.S{k}", INT, True, False, k, k)

    def target(self, scope: Scope) -> tuple[SlotDecl, str] | None:
        """A slot element to write: (slot, the text of the element)."""
        slots = self._reads(scope, lambda s: True)
        if not slots:
            return None
        slot = self.pick(slots)
        if slot.shape == "scalar":
            return slot, f"s.{slot.name}"
        return slot, f"s.{slot.name}[{self.index(slot, scope)}]"

    def statements(self, scope: Scope, count: int, nested: bool = False) -> None:
        for _ in range(count):
            self.statement(scope, nested)

    def statement(self, scope: Scope, nested: bool = False) -> None:
        """One statement: a protocol step of the kernel (alloc-write, read, free, transfer of the
        pages a slot keeps), a slot write, any kernel operation, a guard, a local, or a block."""
        options: list[tuple[str, Callable[[], None]]] = [
            ("write", lambda: self.write_slot(scope)),
        ]
        if self.has("kernel"):
            steps = self.protocol_steps(scope)
            if steps:
                options.append(("protocol step", lambda: self.choose(steps)))
            kernel = self.kernel_statements(scope)
            options.append(("kernel operation", lambda: self.choose(kernel)))
        options.append(("require", lambda: self.emit(f"s.require({self.cond(scope).text})")))
        if self.has("crash") and self.chance(4):
            # the engine's own code fails where the condition holds (the built-in property crash)
            options.append(("crash", lambda: self.emit(f's.crash("boom {self.int_in(0, 9)}", when={self.cond(scope).text})')))
        if self._page_wise(scope):
            options.append(("fill", lambda: self.fill(scope)))
        if self.has("locals"):
            options.append(("local", lambda: self.local(scope)))
        if scope.partial:
            options.append(("overwritten", lambda: self.overwritten(scope)))
        if not nested and self.fixes:
            options.append(("fix", lambda: self.fix_block(scope)))
        if not nested and self.has("static-if") and scope.args:
            options.append(("static if", lambda: self.static_if(scope)))
        if not nested and self.has("loops"):
            options.append(("loop", lambda: self.loop(scope)))
        self.choose(options)

    def loop(self, scope: Scope) -> None:
        """A Python loop over the requests (known when tracing): the body acts for request q."""
        self.emit("for q in range(1, self.requests + 1):")
        inner = replace(scope, req="q", locals=list(scope.locals))
        self.indent += 1
        self.statements(inner, 1, nested=True)
        self.indent -= 1

    def write_slot(self, scope: Scope) -> None:
        got = self.target(scope)
        if got is None:
            self.emit("s.require(True)")
            return
        slot, element = got
        self.emit(f"{element} = {self.value_for(slot, scope).text}")

    def overwritten(self, scope: Scope) -> None:
        """An int element written outside its domain, then overwritten (error family)."""
        ints = [s for s in self._reads(scope, lambda s: s.sort == INT)]
        if not ints:
            self.write_slot(scope)
            return
        slot = self.pick(ints)
        element = f"s.{slot.name}" if slot.shape == "scalar" else f"s.{slot.name}[{self.index(slot, scope)}]"
        if self.draw(st.booleans()):
            self.emit(f"{element} = {element} + {slot.hi - slot.lo + 1}", seeded="domain")
        else:
            self.emit(f"{element} = {element} + 1")
        if self.draw(st.booleans()):
            self.statement(scope, nested=True)
        self.emit(f"{element} = {self.value_for(slot, replace(scope, partial=False)).text}")

    def local(self, scope: Scope) -> None:
        name = self.name("v")
        kind = self.pick(["int", "bool", "pages"])
        if kind == "int":
            e = self.int_expr(scope)
        elif kind == "bool":
            e = self.cond(scope)
        else:
            e = self.pages(scope, self.pick(list(self.pools)))
        self.emit(f"{name} = {e.text}")
        scope.locals.append((name, replace(e, text=name)))

    def fix_block(self, scope: Scope) -> None:
        fx = self.pick(self.fixes)
        negate = self.chance(3)
        self.emit(f"if {'not ' if negate else ''}self.{fx}:")
        self.block(scope)
        if self.chance(3):
            self.emit("else:")
            self.block(scope)

    def static_if(self, scope: Scope) -> None:
        a = self.pick(scope.args)
        self.emit(f"if {a.text} {self.pick(['==', '<', '>='])} {self.int_in(a.lo, a.hi)}:")
        self.block(scope)

    def block(self, scope: Scope) -> None:
        """An indented block; locals assigned inside it are not used after it."""
        inner = replace(scope, locals=list(scope.locals))
        self.indent += 1
        self.statements(inner, self.int_in(1, 2), nested=True)
        self.indent -= 1

    # -- kernel operations --------------------------------------------------------------------

    def request(self, scope: Scope) -> str:
        if scope.req is not None:
            return scope.req
        return str(self.int_in(1, self.requests))

    def op_request(self, scope: Scope) -> tuple[str, str | None]:
        """The request of a kernel operation; in the error family sometimes one that does not
        exist (a seeded error)."""
        if scope.seeded and self.chance(8):
            return str(self.requests + 1), "request"
        return self.request(scope), None

    def op_pages(self, scope: Scope, pool: str) -> tuple[str, str | None]:
        """A page set for a kernel operation on `pool`; in the error family sometimes with a
        page outside the pool (a seeded error)."""
        sensible = [e for _, e in scope.locals if e.sort == PAGES(pool)]
        sensible += [self.read(s, scope) for s in self._reads(scope, lambda s: s.sort == PAGES(pool))]
        if scope.req is not None:
            sensible.append(Expr(f's.owned("{pool}", {scope.req})', PAGES(pool), hi=self.pools[pool].mask))
        # mostly the pages the request holds or keeps track of: a random set violates at once
        p = self.pick(sensible) if sensible and not self.chance(3) else self.pages(scope, pool)
        if scope.seeded and self.chance(3):
            outside = self.pools[pool].pages + self.int_in(0, 1)
            return (f"page({outside})" if p.text == "0" else f"({p.text} | page({outside}))"), "page"
        return p.text, None

    def key(self, scope: Scope, pool: str) -> tuple[str, str | None]:
        keys = self.pools[pool].keys
        if keys is None:
            return "", None
        if scope.seeded and self.chance(3):
            return f", key={self.pick([0, keys + 1, keys + 2])}", "key"
        fits = [a for a in scope.args if 1 <= a.lo and a.hi <= keys]
        if fits and self.draw(st.booleans()):
            return f", key={self.pick(fits).text}", None
        return f", key={self.int_in(1, keys)}", None

    def protocol_steps(self, scope: Scope) -> list[tuple[str, Callable[[], None]]]:
        """Kernel operations on the pages a per-request page-set slot keeps for this request, in
        the order a protocol uses them, so that runs go deeper than one random operation."""
        if scope.req is None:
            return []
        out: list[tuple[str, Callable[[], None]]] = []
        for slot in self.slots:
            if slot.shape != "request" or not isinstance(slot.sort, tuple):
                continue
            pool = slot.sort[1]
            kept = f"s.{slot.name}[{scope.req}]"
            key = "" if self.pools[pool].keys is None else ", key=1"
            out.append((f"acquire {slot.name}", lambda kept=kept, pool=pool, key=key: self.acquire(scope, pool, kept, key)))
            out.append((f"use {slot.name}", lambda kept=kept, pool=pool, key=key: self.emit(
                f's.read("{pool}", {scope.req}, {kept}{key})')))
            out.append((f"release {slot.name}", lambda kept=kept, pool=pool: self.release(scope, pool, kept)))
            plain = [p for p in self.pools if self.pools[p].keys is None]
            if self.pools[pool].keys is None and self.has("send"):
                out.append((f"transfer {slot.name}",
                            lambda kept=kept, pool=pool, plain=plain: self.transfer(scope, pool, kept, plain)))
        return out

    def acquire(self, scope: Scope, pool: str, kept: str, key: str) -> None:
        name = self.name("got")
        self.emit(f'{name} = s.alloc("{pool}", {scope.req}, {self.pick([1, 2])})')
        self.emit(f'{kept} = {kept} | {name}')
        self.emit(f's.write("{pool}", {scope.req}, {name}{key})')
        scope.locals.append((name, Expr(name, PAGES(pool), False, True, 0, self.pools[pool].mask)))

    def release(self, scope: Scope, pool: str, kept: str) -> None:
        self.emit(f's.free("{pool}", {scope.req}, {kept})')
        self.emit(f"{kept} = 0")

    def transfer(self, scope: Scope, pool: str, kept: str, plain: list[str]) -> None:
        dst = self.pick(plain)
        name = self.name("got")
        self.emit(f'{name} = s.alloc("{dst}", {scope.req}, count({kept}))')
        self.emit(f's.send({scope.req}, "{pool}", {kept}, "{dst}", {name})')
        scope.locals.append((name, Expr(name, PAGES(dst), False, True, 0, self.pools[dst].mask)))

    def land(self, scope: Scope, pools: list[str]) -> None:
        """s.land: every transfer of a request, or (partial-landing) those into one pool, or
        into some pages of one pool."""
        r = self.request(scope)
        how = self.int_in(0, 2) if self.has("partial-landing") else 0
        # (fail: a third of the endings fail instead of landing, by the line's number and not by a
        # draw, so that a seed draws the same specs as before fail existed)
        failing = self.has("fail") and len(self.lines) % 3 == 0
        end = "s.kernel.fail" if failing else "s.land"
        if how == 0:
            self.emit(f"{end}({r})")
            return
        pool = self.pick(pools)
        if how == 1:
            self.emit(f'{end}({r}, "{pool}")')
        elif failing and len(self.lines) % 2:  # (a failure after part of the pages were written)
            self.emit(f'{end}({r}, "{pool}", wrote={self.pages(scope, pool).text})')
        else:
            self.emit(f'{end}({r}, "{pool}", {self.pages(scope, pool).text})')

    def kernel_statements(self, scope: Scope) -> list[tuple[str, Callable[[], None]]]:
        pools = list(self.pools)
        out: list[tuple[str, Callable[[], None]]] = [
            ("alloc", lambda: self.alloc(scope, self.pick(pools))),
            ("free", lambda: self.page_op(scope, "free", self.pick(pools))),
            ("write", lambda: self.page_op(scope, "write", self.pick(pools))),
            ("read", lambda: self.page_op(scope, "read", self.pick(pools))),
        ]
        plain = [p for p in pools if self.pools[p].keys is None]
        if plain and self.has("send"):
            out.append(("send", lambda: self.send(scope, plain)))
            out.append(("land", lambda: self.land(scope, pools)))
        # a transfer between keyed pools copies keys (pools of the same keys: a pool with itself)
        keyed = [p for p in pools if self.pools[p].keys is not None]
        if keyed and self.has("send") and self.has("keyed-send"):
            out.append(("keyed send", lambda: self.keyed_send(scope, keyed)))
        lowest = [p for p in pools if self.pools[p].order == "lowest"]
        if lowest and self.has("take"):
            out.append(("take", lambda: self.page_op(scope, "take", self.pick(lowest))))
        shared = [p for p in pools if self.pools[p].shared]
        if shared and self.has("share"):
            out.append(("share", lambda: self.page_op(scope, "share", self.pick(shared))))
        pinning = [p for p in pools if self.pools[p].pins]
        if pinning:
            out.append(("pin", lambda: self.page_op(scope, "pin", self.pick(pinning))))
            out.append(("unpin", lambda: self.page_op(scope, "unpin", self.pick(pinning))))
        return out

    def alloc(self, scope: Scope, pool: str) -> None:
        """`got = s.alloc(pool, r, n)`: n never negative, except in the error family, where a
        state value may be (a run-time error) or a constant always is (a seeded error)."""
        n = self.pick([_lit(1), _lit(2), *scope.args, self.int_expr(scope, 1)])
        seeded = None
        if scope.seeded and self.chance(6):
            n, seeded = _lit(-1), "alloc"
        elif n.lo < 0 and (n.static or not scope.partial):
            n = Expr(f"Max({n.text}, 0)", INT, n.static, False, 0, max(n.hi, 0))
        name = self.name("got")
        who = self.holder(scope, pool) if self.pools[pool].owners else self.request(scope)
        self.emit(f'{name} = s.alloc("{pool}", {who}, {n.text})', seeded=seeded)
        got = Expr(name, PAGES(pool), False, True, 0, self.pools[pool].mask)
        scope.locals.append((name, got))
        keep = self._reads(scope, lambda s: s.sort == PAGES(pool))
        if keep and self.draw(st.booleans()):
            slot = self.pick(keep)
            element = f"s.{slot.name}" if slot.shape == "scalar" else f"s.{slot.name}[{self.index(slot, scope)}]"
            self.emit(f"{element} = {self.pick([name, f'({element} | {name})'])}")

    def page_op(self, scope: Scope, op: str, pool: str) -> None:
        pages, seeded = self.op_pages(scope, pool)
        key, key_seeded = self.key(scope, pool) if op in ("write", "read") else ("", None)
        request, request_seeded = self.op_request(scope)
        info = self.pools[pool]
        if info.owners and op not in ("write", "read") and request_seeded is None and self.chance(3):
            request = repr(self.pick(list(info.owners)))  # (an owner that is not a request)
        if op in ("take", "share", "pin") and info.shared and info.counted is not None and not scope.partial \
                and seeded is None and request_seeded is None:
            # one more reference must stay within counted= (else a run-time spec error, kept
            # for the error family): the action waits while a page would exceed it
            name = self.name("more")
            self.emit(f"{name} = {pages}")
            for p in range(info.pages):
                if op == "pin":  # (one pin each at most: a deeper pin count is seen through the error only)
                    held, most = f'count(s.pinned_pages("{pool}", {request}) & page({p}))', 1
                else:
                    held, most = f's.references("{pool}", {p}, {request})', info.counted
                self.emit(f"s.require({held} + If(has({name}, {p}), 1, 0) <= {most})")
            pages = name
        self.emit(f's.{op}("{pool}", {request}, {pages}{key})', seeded=seeded or key_seeded or request_seeded)

    def keyed_send(self, scope: Scope, keyed: list[str]) -> None:
        src = self.pick(keyed)
        dst = self.pick([p for p in keyed if self.pools[p].keys == self.pools[src].keys])
        a, sa = self.op_pages(scope, src)
        b, sb = self.op_pages(scope, dst)
        request, sr = self.op_request(scope)
        self.emit(f's.send({request}, "{src}", {a}, "{dst}", {b})  # keys', seeded=sa or sb or sr)

    def send(self, scope: Scope, plain: list[str]) -> None:
        src, dst = self.pick(plain), self.pick(plain)
        a, sa = self.op_pages(scope, src)
        b, sb = self.op_pages(scope, dst)
        request, sr = self.op_request(scope)
        self.emit(f's.send({request}, "{src}", {a}, "{dst}", {b})', seeded=sa or sb or sr)

    # -- actions and properties ---------------------------------------------------------------

    def action(self, index: int) -> None:
        has_r = not self.chance(6)
        args = ["r: Request"] if has_r else []
        scope = Scope("r" if has_r else None, partial=self.errors, seeded=self.errors)
        if self.has("extra-args") and self.chance(3):
            hi = self.int_in(1, 2)
            args.append(f"x: ints(0, {hi})")
            scope.args.append(Expr("x", INT, True, False, 0, hi))
            if self.chance(2):
                # an argument declared bool: the action gets True or False, a condition (static:
                # Python `not` and `if` apply to it, `~` does not)
                args.append("b: bool")
                scope.locals.append(("b", Expr("b", BOOL, True, False)))
        keyed = [p for p in self.pools.values() if p.keys is not None]
        if keyed and self.chance(3):
            keys = keyed[0].keys or 1
            args.append(f"k: ints(1, {keys})")
            scope.args.append(Expr("k", INT, True, False, 1, keys))
        self.emit("")
        fair = self.pick(["", "", "(fair=True)", '(fair="strong")']) if self.has("liveness") else ""
        self.emit(f"@action{fair}")
        self.emit(f"def act_{index}(self, s{''.join(', ' + a for a in args)}):")
        self.indent += 1
        # A protocol step: action i runs in a stage up to i (action 0 in the first one) and
        # mostly moves on to the next stage, so that most actions can fire.
        at = self.int_in(0, min(index, self.stages - 1))
        if has_r and not self.chance(5):
            self.emit(f"s.require(s.stage[r] == Stage.S{at})")
        self.statements(scope, self.int_in(1, 4))
        if has_r and not self.chance(4):
            then = self.pick([(at + 1) % self.stages, *range(self.stages)])
            self.emit(f"s.stage[r] = Stage.S{then}")
        self.indent -= 1

    def invariant(self, index: int) -> None:
        self.emit("")
        self.emit("@invariant")
        partial = self.errors and self.chance(2)
        if self.has("per-request-invariant") and self.chance(3):
            # an invariant of each request, `(self, s, r)`: the engines take the conjunction,
            # and a violation names the requests it fails for
            self.emit(f"def inv_{index}(self, s, r):")
            self.indent += 1
            cond = self.cond(Scope("r", partial=partial)).text
            self.emit(f"return {cond}" if self.chance(8) else f"return ((s.stage[r] == Stage.S0) | {cond})")
            self.indent -= 1
            return
        self.emit(f"def inv_{index}(self, s):")
        self.indent += 1
        if not self.chance(6):
            # per request, and (mostly) only once the request has left the first stage, so
            # that the initial state satisfies it and the search goes somewhere
            cond = self.cond(Scope("q", partial=partial)).text
            if not self.chance(8):
                cond = f"((s.stage[q] == Stage.S0) | {cond})"
            self.emit("ok = True")
            self.emit("for q in range(1, self.requests + 1):")
            self.indent += 1
            self.emit(f"ok = ok & {cond}")
            self.indent -= 1
            self.emit("return ok")
        else:
            self.emit(f"return {self.cond(Scope(None, partial=partial)).text}")
        self.indent -= 1

    def sometimes(self, index: int) -> None:
        self.emit("")
        self.emit("@sometimes")
        self.emit(f"def some_{index}(self, s):")
        self.indent += 1
        self.emit(f"return {self.cond(Scope(None)).text}")
        self.indent -= 1

    def live(self, index: int) -> None:
        """A liveness property: @eventually or @leads_to, per request or of the whole state."""
        per_request = not self.chance(3)
        scope = Scope("r" if per_request else None)
        kind = self.pick(["leads_to", "eventually"])
        within = f"(within={self.int_in(0, 3)})" if kind == "leads_to" and self.chance(3) else ""
        self.emit("")
        self.emit(f"@{kind}{within}")
        self.emit(f"def live_{index}(self, s{', r' if per_request else ''}):")
        self.indent += 1
        if kind == "leads_to":
            self.emit(f"return {self.cond(scope).text}, {self.cond(scope).text}")
        else:
            self.emit(f"return {self.cond(scope).text}")
        self.indent -= 1

    def measure(self, index: int) -> None:
        """A @measure: an integer of the state (its largest value, and how long it stays above 0)."""
        self.emit("")
        self.emit("@measure")
        self.emit(f"def cost_{index}(self, s):")
        self.indent += 1
        self.emit(f"return {self.int_expr(Scope(None)).text}")
        self.indent -= 1

    def lemma(self, index: int) -> None:
        """A @lemma (for prove only): like an invariant, per request after the first stage."""
        self.emit("")
        self.emit("@lemma")
        self.emit(f"def lem_{index}(self, s):")
        self.indent += 1
        self.emit("ok = True")
        self.emit("for q in range(1, self.requests + 1):")
        self.indent += 1
        self.emit(f"ok = ok & ((s.stage[q] == Stage.S0) | {self.cond(Scope('q')).text})")
        self.indent -= 1
        self.emit("return ok")
        self.indent -= 1

    def finished(self) -> None:
        self.emit("")
        self.emit("def finished(self, s, r):")
        self.indent += 1
        if self.draw(st.booleans()):
            self.emit(f"return s.stage[r] == Stage.S{self.stages - 1}")
        else:
            self.emit(f"return {self.cond(Scope('r')).text}")
        self.indent -= 1

    def body(self) -> None:
        for name in self.params:
            if name in ("requests", "limit2"):
                continue
            self.emit(f'{name} = param(2, "a generated parameter")')
        if self.derived is not None:  # (after limit, which it is computed from)
            self.emit(f'limit2 = param(limit + {self.derived[0]}, "a derived parameter")')
        for fx in self.fixes:
            self.emit(f'{fx} = fix("a generated fix")')
        for p in self.pools.values():
            self.emit(p.declaration())
        if self.has("liveness") and self.has("kernel") and self.chance(4):
            name = self.pick(["eventually-released", "eventually-landed"])
            self.emit(f'liveness = ("{name}",)')
        for s in self.slots:
            self.emit(s.declaration())
        for i in range(self.int_in(1, 4)):
            self.action(i)
        if self.has("invariants"):
            for i in range(self.int_in(0, 2)):
                self.invariant(i)
        if self.has("sometimes") and self.chance(3):
            self.sometimes(0)
        if self.has("lemmas") and self.chance(5):
            self.lemma(0)
        if self.has("liveness") and (self.force_liveness or self.chance(3)):
            self.live(0)
        if self.has("liveness") and self.chance(4):
            self.measure(0)
        if self.has("finished") and self.draw(st.booleans()):
            self.finished()


#: Names a spec may import from ownership, in the order of the import line.
_IMPORTABLE = ["If", "Max", "Min", "Request", "Spec", "action", "all_of", "any_of", "array", "count", "eventually",
               "first", "fix", "has", "ints", "invariant", "leads_to", "lemma", "measure", "nth", "page", "param", "per_page", "per_request",
               "pool", "select", "sometimes", "state", "without"]


def _assemble(w: _Writer) -> tuple[str, dict[int, str]]:
    body = "\n".join(w.lines)
    used = [n for n in _IMPORTABLE if n == "Spec" or re.search(rf"(?<![.\w]){n}\b", body)]
    head = ['"""A spec generated by tests/differential/generator.py."""', "", "from enum import IntEnum", ""]
    imports = ", ".join(used)
    if len(imports) > 80:
        head += ["from ownership import ("] + [f"    {n}," for n in used] + [")"]
    else:
        head.append(f"from ownership import {imports}")
    head += ["", "", "class Stage(IntEnum):"]
    head += [f"    S{k} = {k}" for k in range(w.stages)]
    head += ["", "", "class Generated(Spec):"]
    seeded = {len(head) + i + 1: kind for i, kind in w.seeded.items()}
    return "\n".join(head) + "\n" + body + "\n", seeded


@st.composite
def specs(draw: Callable[[Any], Any], features: frozenset[str] = FEATURES, errors: bool | None = None,
          liveness: bool = False) -> GeneratedSpec:
    """A random well-sorted spec (see the module docstring), with its parameters and fixes;
    `errors`: of the error family (True), never (False), or in a quarter of the specs (None);
    `liveness`: always with a liveness property (else in a third of the specs)."""
    w = _Writer(draw, features, errors, liveness)
    w.declarations()
    w.body()
    source, seeded = _assemble(w)
    return GeneratedSpec(source, dict(w.params), list(w.enabled), seeded, w.errors)


__all__ = ["FEATURES", "SEEDED_KINDS", "GeneratedSpec", "specs"]
