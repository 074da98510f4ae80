"""What a spec declares: parameters, fixes, pools, state slots, domains, actions and properties.

A spec is a Python class (see `Spec`). Its body uses the functions here; nothing in this
module runs an action. Parameters are lazy (`ParamExpr`) so that bounds such as
`ints(1, context)` are resolved only when a spec is instantiated at concrete parameters.
"""

from __future__ import annotations

import difflib
import enum
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError

# --------------------------------------------------------------------------- parameters


class ParamExpr:
    """An integer expression over parameters, resolved when the spec is instantiated."""

    def resolve(self, env: dict[str, int]) -> int:
        raise NotImplementedError

    def names(self) -> set[str]:
        """The parameters it is computed from."""
        raise NotImplementedError

    def _bin(self, other: Any, fn: Callable[[int, int], int], sym: str, swap: bool = False) -> ParamExpr:
        a, b = (other, self) if swap else (self, other)
        return _Derived(lambda env: fn(_resolve(a, env), _resolve(b, env)), sym, (a, b))

    def __add__(self, o: Any) -> ParamExpr: return self._bin(o, lambda x, y: x + y, "+")
    def __radd__(self, o: Any) -> ParamExpr: return self._bin(o, lambda x, y: x + y, "+", True)
    def __sub__(self, o: Any) -> ParamExpr: return self._bin(o, lambda x, y: x - y, "-")
    def __rsub__(self, o: Any) -> ParamExpr: return self._bin(o, lambda x, y: x - y, "-", True)
    def __mul__(self, o: Any) -> ParamExpr: return self._bin(o, lambda x, y: x * y, "*")
    def __rmul__(self, o: Any) -> ParamExpr: return self._bin(o, lambda x, y: x * y, "*", True)
    def __floordiv__(self, o: Any) -> ParamExpr: return self._bin(o, lambda x, y: x // y, "//")


class _Derived(ParamExpr):
    """`a op b` over parameters. Its names and its text are read when asked: in a class body
    the parameters are not named yet (__set_name__ comes after the body)."""

    def __init__(self, fn: Callable[[dict[str, int]], int], sym: str, operands: tuple[Any, Any]) -> None:
        self._fn = fn
        self._sym = sym
        self._operands = operands

    def resolve(self, env: dict[str, int]) -> int:
        return self._fn(env)

    def names(self) -> set[str]:
        return set().union(*(x.names() for x in self._operands if isinstance(x, ParamExpr)))

    def __repr__(self) -> str:
        a, b = self._operands
        return f"{_show(a)} {self._sym} {_show(b)}"


def _resolve(x: Any, env: dict[str, int]) -> int:
    return x.resolve(env) if isinstance(x, ParamExpr) else int(x)


def _show(x: Any) -> str:
    if isinstance(x, _Derived):
        return f"({x!r})"
    return repr(x) if isinstance(x, ParamExpr) else str(x)


class Param(ParamExpr):
    """A named integer parameter of a spec, with a default and a help text. The default may
    be computed from parameters declared before it (`capacity = param(context - 1, ...)`): a
    derived parameter, which takes that value unless it is given one."""

    def __init__(self, default: int | ParamExpr, help: str, *, minimum: int = 0) -> None:
        self.name = ""
        self.default = default
        self.help = help
        self.minimum = minimum

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def resolve(self, env: dict[str, int]) -> int:
        return env[self.name]

    def names(self) -> set[str]:
        return {self.name}

    @property
    def derived(self) -> ParamExpr | None:
        """The expression of a derived parameter's default, or None."""
        return self.default if isinstance(self.default, ParamExpr) else None

    def default_at(self, env: dict[str, int]) -> int:
        """The default, at the values `env` gives the parameters it is derived from."""
        return self.default.resolve(env) if isinstance(self.default, ParamExpr) else self.default

    def __repr__(self) -> str:
        return self.name


def param(default: int | ParamExpr, help: str, *, minimum: int = 0) -> Any:
    """Declare an integer parameter: `pages = param(8, "decode KV pool, in pages")`, or one
    derived from parameters declared before it: `capacity = param(context - 1, "...")`."""
    return Param(default, help, minimum=minimum)


class Fix:
    """A named fix, off by default; inside actions `self.<attr>` is True when it is on."""

    def __init__(self, help: str) -> None:
        self.attr = ""
        self.name = ""
        self.help = help

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = name
        self.name = name.replace("_", "-")


def fix(help: str) -> Any:
    """Declare a fix: `door_retire = fix("0.5.21, #38935: ...")`, enabled by `--fix door-retire`."""
    return Fix(help)


# --------------------------------------------------------------------------- domains


class Domain:
    """A finite set of integers that a slot or an action argument ranges over."""

    def bounds(self, env: dict[str, int]) -> tuple[int, int]:
        raise NotImplementedError

    def values(self, env: dict[str, int]) -> list[int]:
        lo, hi = self.bounds(env)
        return list(range(lo, hi + 1))

    def show(self, v: int, env: dict[str, int]) -> Any:
        """The value as it appears in traces (ITF): an int, a name or a list."""
        return v

    def parse(self, x: Any, env: dict[str, int]) -> int:
        """The inverse of `show`, for reading traces; raises ValueError on a foreign value."""
        if isinstance(x, bool) or not isinstance(x, int):
            raise ValueError(f"expected an integer, got {x!r}")
        return x


@dataclass(frozen=True)
class IntRange(Domain):
    """The integers lo..hi, bounds possibly given by parameters."""

    lo: Any
    hi: Any

    def bounds(self, env: dict[str, int]) -> tuple[int, int]:
        return _resolve(self.lo, env), _resolve(self.hi, env)


def ints(lo: Any, hi: Any) -> IntRange:
    """The integers lo..hi inclusive; bounds may be parameters: `ints(1, context)`."""
    return IntRange(lo, hi)


class BoolDomain(Domain):
    """True or False, stored as 1 or 0."""

    def bounds(self, env: dict[str, int]) -> tuple[int, int]:
        return 0, 1

    def show(self, v: int, env: dict[str, int]) -> Any:
        return bool(v)

    def parse(self, x: Any, env: dict[str, int]) -> int:
        if not isinstance(x, bool):
            raise ValueError(f"expected true or false, got {x!r}")
        return int(x)


class EnumDomain(Domain):
    """The members of an IntEnum, shown by name."""

    def __init__(self, enum_cls: type[enum.IntEnum]) -> None:
        self.enum_cls = enum_cls
        self.by_name = {m.name: int(m) for m in enum_cls}

    def bounds(self, env: dict[str, int]) -> tuple[int, int]:
        vals = [int(m) for m in self.enum_cls]
        return min(vals), max(vals)

    def values(self, env: dict[str, int]) -> list[int]:
        return sorted(int(m) for m in self.enum_cls)

    def show(self, v: int, env: dict[str, int]) -> Any:
        return self.enum_cls(v).name

    def parse(self, x: Any, env: dict[str, int]) -> int:
        if x not in self.by_name:
            raise ValueError(f"expected one of {', '.join(self.by_name)}, got {x!r}")
        return self.by_name[x]


class RequestDomain(Domain):
    """Request identities 1..requests, shown as r1, r2, ...; with `none`, 0 is a value too."""

    def __init__(self, *, none: str | None = None, earlier: str | None = None) -> None:
        self.none = none          # the name of 0 ("free", "none"), or None if 0 is not a value
        self.earlier = earlier    # the name of requests+1 ("r0": KV of an earlier request), if any

    def bounds(self, env: dict[str, int]) -> tuple[int, int]:
        r = env["requests"]
        return (0 if self.none else 1), (r + 1 if self.earlier else r)

    def show(self, v: int, env: dict[str, int]) -> Any:
        if v == 0 and self.none:
            return self.none
        if self.earlier and v == env["requests"] + 1:
            return self.earlier
        return f"r{v}"

    def parse(self, x: Any, env: dict[str, int]) -> int:
        if self.none and x == self.none:
            return 0
        if self.earlier and x == self.earlier:
            return env["requests"] + 1
        if isinstance(x, str) and x.startswith("r") and x[1:].isdigit():
            v = int(x[1:])
            if 1 <= v <= env["requests"]:
                return v
        raise ValueError(f"expected a request name r1..r{env['requests']}, got {x!r}")


#: The domain of an action argument naming a request: `def arrive(self, s, r: Request)`.
Request = RequestDomain()


class HolderDomain(Domain):
    """The holders of a page of a shared pool: requests 1..requests, then the pool's owners
    that are not requests (`owners=`), each a field of `bits` bits of one integer (bit r-1
    for request r in a pool without counts). Shown as a set of names, or, in a counted pool
    (`counted=N`: how many references each holder has), as a sorted tuple that names a holder
    once per reference."""

    def __init__(self, owners: tuple[str, ...] = (), counted: int | None = None) -> None:
        self.owners = owners
        self.counted = counted
        self.bits = 1 if counted is None else max(counted.bit_length(), 1)

    def names(self, env: dict[str, int]) -> list[str]:
        """Every holder, in field order: r1..rN, then the owners."""
        return [f"r{r}" for r in range(1, env["requests"] + 1)] + list(self.owners)

    def counts(self, v: int, env: dict[str, int]) -> list[tuple[str, int]]:
        """(holder, how many references) for each holder of value v."""
        field = (1 << self.bits) - 1
        out = []
        for k, name in enumerate(self.names(env)):
            n = v >> (k * self.bits) & field
            if n:
                out.append((name, n))
        return out

    def bounds(self, env: dict[str, int]) -> tuple[int, int]:
        return 0, (1 << (self.bits * len(self.names(env)))) - 1

    def show(self, v: int, env: dict[str, int]) -> Any:
        if self.counted is None:
            return frozenset(name for name, _ in self.counts(v, env))
        return tuple(name for name, n in self.counts(v, env) for _ in range(n))

    def parse(self, x: Any, env: dict[str, int]) -> int:
        names = self.names(env)
        kind = (set, frozenset) if self.counted is None else (tuple, list)
        if not isinstance(x, kind):
            raise ValueError(f"expected {'a set' if self.counted is None else 'a tuple'} of holders"
                             f" ({', '.join(names)}), got {x!r}")
        out = 0
        for name in x:
            if name not in names:
                raise ValueError(f"expected a holder ({', '.join(names)}), got {name!r}")
            unit = 1 << (names.index(name) * self.bits)
            if self.counted is None:
                out |= unit
            elif (out >> (names.index(name) * self.bits) & ((1 << self.bits) - 1)) >= self.counted:
                raise ValueError(f"{name} holds more than {self.counted} references in {list(x)!r}")
            else:
                out += unit
        return out


class KeyDomain(Domain):
    """Content keys of a keyed pool: 0 is "none" (never written), 1..keys are k1..kK, and
    keys+1 is "k0", KV from before the trace (warm pools)."""

    def __init__(self, keys: Any) -> None:
        self.keys = keys

    def bounds(self, env: dict[str, int]) -> tuple[int, int]:
        return 0, _resolve(self.keys, env) + 1

    def show(self, v: int, env: dict[str, int]) -> Any:
        if v == 0:
            return "none"
        return "k0" if v == _resolve(self.keys, env) + 1 else f"k{v}"

    def parse(self, x: Any, env: dict[str, int]) -> int:
        k = _resolve(self.keys, env)
        if x == "none":
            return 0
        if x == "k0":
            return k + 1
        if isinstance(x, str) and x.startswith("k") and x[1:].isdigit() and 1 <= int(x[1:]) <= k:
            return int(x[1:])
        raise ValueError(f"expected none, k0 or a key k1..k{k}, got {x!r}")


class PageSetDomain(Domain):
    """Subsets of a pool's pages, stored as a bitmask, shown as a sorted list of page numbers."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    def bounds(self, env: dict[str, int]) -> tuple[int, int]:
        return 0, (1 << self.pool.size(env)) - 1

    def show(self, v: int, env: dict[str, int]) -> Any:
        return frozenset(p for p in range(self.pool.size(env)) if v >> p & 1)

    def parse(self, x: Any, env: dict[str, int]) -> int:
        if not isinstance(x, (set, frozenset)) or not all(isinstance(p, int) and not isinstance(p, bool) for p in x):
            raise ValueError(f"expected a set of page numbers, got {x!r}")
        size = self.pool.size(env)
        if any(not 0 <= p < size for p in x):
            raise ValueError(f"page numbers must be 0..{size - 1}, got {sorted(x)}")
        return sum(1 << p for p in x)


def as_domain(x: Any, where: str) -> Domain:
    """Turn what a spec wrote (a Domain, an IntEnum class, bool, a Pool) into a Domain."""
    if isinstance(x, Domain):
        return x
    if x is bool:
        return BoolDomain()
    if inspect.isclass(x) and issubclass(x, enum.IntEnum):
        if not list(x):
            raise SpecError(f"{where}: the IntEnum {x.__name__} has no members; give it at least one")
        return EnumDomain(x)
    if isinstance(x, Pool):
        return PageSetDomain(x)
    raise SpecError(
        f"{where}: {x!r} is not a domain. Use ints(lo, hi), bool, an IntEnum class, Request, "
        "or a pool (for a set of its pages)."
    )


# --------------------------------------------------------------------------- pools


class Pool:
    """A node's KV page pool; the kernel keeps owner, content and transfer marks per page."""

    ORDERS = ("lowest", "lifo")

    def __init__(self, pages: Any, *, order: str = "lowest", warm: bool = False, help: str = "",
                 shared: bool = False, keys: Any = None, counted: Any = None, owners: Any = (),
                 pins: bool = False) -> None:
        if order not in self.ORDERS:
            raise _declaration_error(f"pool order {order!r} is unknown; use one of {', '.join(self.ORDERS)}")
        owners = _owner_names(owners)
        if counted is not None and not isinstance(counted, ParamExpr) and (
                isinstance(counted, bool) or not isinstance(counted, int) or counted < 1):
            raise _declaration_error(f"pool(..., counted={counted!r}): counted is how many references one holder"
                              " may have on a page, an integer of at least 1 or a parameter"
                              " (counted=2: a request may hold a page twice)")
        # references counted, owners that are not requests, pins: all are holders of a shared pool
        shared = shared or counted is not None or bool(owners) or pins
        if shared and order == "lifo":
            raise _declaration_error("a shared pool hands out its lowest free pages (order=\"lowest\"); a"
                              " free-list order of a shared pool belongs in the spec's own state")
        self.name = ""
        self.pages = pages
        self.order = order
        self.warm = warm
        self.help = help
        self.shared = shared
        self.keys = keys
        self.counted = counted
        self.owners = owners
        self.pins = pins

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def size(self, env: dict[str, int]) -> int:
        return _resolve(self.pages, env)


def pool(pages: Any, *, order: str = "lowest", warm: bool = False, help: str = "",
         shared: bool = False, keys: Any = None, counted: Any = None, owners: Any = (),
         pins: bool = False) -> Any:
    """Declare a node's page pool.

    `order`: which free page `alloc` hands out first: "lowest" (lowest free index) or "lifo"
    (the most recently freed first: SGLang's paged allocator prepends freed pages).
    `warm`: every page starts holding KV of an earlier request (r0), as a real pool that is
    never zeroed does; otherwise pages start never written.
    `shared`: several requests may hold a page at once (a prefix-cache hit: vLLM's ref_cnt,
    SGLang's radix lock_ref); the kernel then keeps the set of holders, and `s.share` adds one.
    `keys`: a page's content is a key 1..keys chosen by the spec (e.g. a prefix's block hash)
    instead of the writing request, so that requests with the same prefix read the same KV.
    `counted`: a holder may hold a page up to this many times (a reference count per holder:
    each `share` adds one, each `free` drops one); dropping a reference nobody has is
    `count-below-zero`. Implies `shared`.
    `owners`: holders that are not requests, by name (the prefix cache's own reference, an
    offload worker): `s.share(pool, "cache", pages)`. Implies `shared`.
    `pins`: holders may also pin pages (`s.pin`, `s.unpin`: SGLang's lock_ref beside the radix
    tree's reference); dropping a page's last reference while it is pinned is `free-pinned`.
    Implies `shared`.
    """
    return Pool(pages, order=order, warm=warm, help=help, shared=shared, keys=keys, counted=counted,
                owners=owners, pins=pins)


def _declaration_error(message: str) -> SpecError:
    """A SpecError at the spec's line that is being declared (a pool, a slot)."""
    from .location import spec_location

    file, line = spec_location()
    return SpecError(message, file=file, line=line)


def _owner_names(owners: Any) -> tuple[str, ...]:
    """The owners of a pool that are not requests: distinct identifiers, none like a request."""
    if isinstance(owners, str):
        owners = (owners,)
    if not isinstance(owners, (tuple, list)):
        raise _declaration_error(f"pool(..., owners={owners!r}): owners are names, e.g. owners=(\"cache\", \"offload\")")
    for o in owners:
        if not isinstance(o, str) or not o.isidentifier() or (o[:1] == "r" and o[1:].isdigit()) or o in ("free", "none"):
            raise _declaration_error(f"pool(..., owners=...): {o!r} is not an owner's name; an owner is named by an"
                              " identifier that is not a request's name (r1, r2, ...) nor free or none, e.g. \"cache\"")
    if len(set(owners)) != len(owners):
        raise _declaration_error(f"pool(..., owners={tuple(owners)!r}): an owner is named twice")
    return tuple(owners)


# --------------------------------------------------------------------------- state slots


def _consecutive(enum_cls: type[enum.IntEnum]) -> None:
    """NOTE(enum-consecutive): a slot's domain is lo..hi in every interpreter (a write is
    checked against its bounds), so an IntEnum that a slot holds must number its members
    without a gap: with A=0 and C=5, a write of 3 would be in the domain and no member."""
    values = sorted({int(m) for m in enum_cls})
    if values and values != list(range(values[0], values[-1] + 1)):
        members = ", ".join(f"{m.name}={int(m)}" for m in enum_cls)
        raise _declaration_error(f"the members of IntEnum {enum_cls.__name__} ({members}) are not consecutive integers,"
                          f" so a slot of it would take values that are no member; number them {values[0]},"
                          f" {values[0] + 1}, {values[0] + 2}, ...")


class Slot:
    """A piece of protocol state: a scalar, or an array per request or per page of a pool."""

    def __init__(self, domain: Any, init: Any, shape: str, over: Pool | None = None) -> None:
        if inspect.isclass(domain) and issubclass(domain, enum.IntEnum):
            _consecutive(domain)
        self.name = ""
        self.domain_decl = domain
        self.init = init
        self.shape = shape        # "scalar", "request", "page", "array"
        self.over = over

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name


def state(domain: Any, init: Any = 0) -> Any:
    """A scalar state slot: `phase = state(Phase, Phase.IDLE)`."""
    return Slot(domain, init, "scalar")


def per_request(domain: Any, init: Any = 0) -> Any:
    """One value per request: `stage = per_request(Stage, Stage.NEW)`; index with a request."""
    return Slot(domain, init, "request")


def per_page(pool_: Any, domain: Any, init: Any = 0) -> Any:
    """One value per page of a pool: `pinned = per_page(decode, bool, False)`. `init` may be
    a function of the page number: `per_page(kv, ints(0, 8), init=lambda p: p)`."""
    if not isinstance(pool_, Pool):
        from .location import spec_location

        file, line = spec_location()
        hint = (f" (the pool itself, not its name: per_page({pool_}, ...) with the attribute declared"
                f" by {pool_} = pool(...) above)") if isinstance(pool_, str) else ""
        raise SpecError(f"per_page(pool, domain): the first argument must be a pool, got {pool_!r}{hint}",
                        file=file, line=line)
    return Slot(domain, init, "page", over=pool_)


def array(index: Any, domain: Any, init: Any = 0) -> Any:
    """One value per integer of a range: `index = array(ints(1, prefixes), decode)` (e.g. a
    prefix cache's hash -> block map); index it with an int of that range."""
    return Slot(domain, init, "array", over=index)


# --------------------------------------------------------------------------- actions and properties


@dataclass
class ActionDecl:
    """An action: a method `(self, s, **args)` whose arguments range over finite domains."""

    fn: Callable[..., Any]
    name: str
    args: list[tuple[str, Any]]  # (argument name, domain as declared)
    actor: str | None
    fair: str | None = None      # "weak" | "strong" | None: the fairness each binding has

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.fn) or ""


#: The fairness an action may declare (`@action(fair=...)`), and what True means.
FAIRNESS = {True: "weak", "weak": "weak", "strong": "strong", False: None, None: None}


def action(fn: Callable[..., Any] | None = None, *, actor: str | None = None, fair: Any = False) -> Any:
    """Mark a method as an action. Argument domains come from annotations:
    `def arrive(self, s, r: Request, n: Length)`. `actor` names the node that acts
    (e.g. "prefill", "decode", "transfer") for the trace views.

    `fair` matters to liveness properties only (`@eventually`, `@leads_to`): True or "weak",
    each binding of the action (the action at given arguments) that stays enabled runs
    eventually; "strong", each binding enabled again and again runs eventually. Model with it
    a timeout, a transfer worker or a scheduler that must run; an action without it may be
    postponed forever (docs/spec-language.md, "Liveness")."""

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        f.__ownership_action__ = {"actor": actor, "fair": fair}  # type: ignore[attr-defined]
        return f

    return mark(fn) if fn is not None else mark


def invariant(fn: Callable[..., Any]) -> Any:
    """Mark a method `(self, s) -> condition` that must hold in every reachable state, or
    `(self, s, r) -> condition` that must hold for every request r (a violation names the
    requests it fails for)."""
    fn.__ownership_property__ = "invariant"  # type: ignore[attr-defined]
    return fn


def sometimes(fn: Callable[..., Any]) -> Any:
    """Mark a method `(self, s) -> condition` that must hold in SOME reachable state.

    It guards against vacuity: a spec in which no request ever completes proves nothing."""
    fn.__ownership_property__ = "sometimes"  # type: ignore[attr-defined]
    return fn


def lemma(fn: Callable[..., Any]) -> Any:
    """Mark a method `(self, s) -> condition` (or `(self, s, r)`, for every request r) as a
    lemma: a strengthening invariant for proofs.

    A lemma must hold in every reachable state, like an invariant, but it states no property
    of the protocol: it helps `ownership prove` (k-induction) rule out unreachable states from
    which a property could fail (e.g. "a page in a block table is owned by that request").
    `prove` proves lemmas together with the properties and reports a lemma that fails in a
    reachable state as violated; `check` ignores lemmas (docs/engines.md)."""
    fn.__ownership_property__ = "lemma"  # type: ignore[attr-defined]
    return fn


def eventually(fn: Callable[..., Any]) -> Any:
    """Mark a method `(self, s) -> condition`, or `(self, s, r) -> condition` for each request
    r, that must hold at some point of every behaviour (a liveness property).

    A behaviour is a run from the initial state that either goes on forever, fairly (see
    `action(fair=...)`), or stops in a state where no action is enabled and stays there."""
    fn.__ownership_property__ = "eventually"  # type: ignore[attr-defined]
    return fn


def leads_to(fn: Callable[..., Any] | None = None, *, within: Any = None) -> Any:
    """Mark a method `(self, s) -> (p, q)`, or `(self, s, r) -> (p, q)` for each request r: on
    every behaviour, whenever p holds, q holds then or later (a liveness property), e.g.
    "a reserved page is eventually read or freed". See `eventually` for what a behaviour is.

    `within=N` (an int or a parameter) bounds the response: q holds at most N steps after p,
    on every run; fairness does not matter then (any run of N steps is the start of a fair
    behaviour)."""

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        f.__ownership_property__ = "leads-to"  # type: ignore[attr-defined]
        f.__ownership_within__ = within  # type: ignore[attr-defined]
        return f

    return mark(fn) if fn is not None else mark


def measure(fn: Callable[..., Any]) -> Any:
    """Mark a method `(self, s) -> int`: a cost of the protocol that the explicit engine
    measures over every reachable state, e.g. the pages held for requests nobody will serve.
    `ownership check` reports its largest value and the longest stretch of a run where it
    is above 0, a number to compare between releases (it is not a property: nothing fails)."""
    fn.__ownership_property__ = "measure"  # type: ignore[attr-defined]
    return fn


#: The kinds of property that are liveness properties (checked on behaviours, not states).
LIVENESS_KINDS = ("eventually", "leads-to")


@dataclass
class PropertyDecl:
    """A spec's own invariant, sometimes, lemma or liveness property."""

    fn: Callable[..., Any]
    name: str
    kind: str  # "invariant" | "sometimes" | "lemma" (used only by `prove`) | "eventually" | "leads-to" | "measure"
    per_request: bool = False  # `(self, s, r)`: one for each request (liveness, invariant, lemma)
    within: Any = None         # leads_to(within=N): the bound, an int or a parameter

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.fn) or ""

    def what(self, args: tuple[int, ...] = ()) -> str:
        """How errors name the property, or one instance of it: `leads-to answered (r=r1)`."""
        return f"{self.kind} {self.name}" + (f" (r=r{args[0]})" if args else "")


def did_you_mean(name: str, choices: Any) -> str:
    """" Did you mean 'x'?" for the closest of `choices` to a misspelt name, or ""."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def kebab(name: str) -> str:
    return name.replace("_", "-")
