"""A Model: one spec instantiated at concrete parameters and fixes, laid out as a flat state.

A state is a tuple of small integers. The Model knows which positions belong to which slot
(the spec's own slots first, then the kernel's shadow slots of each pool), the initial state,
every action binding (an action with concrete arguments), and how to show a state as named
values for traces. Interpreters run actions on it; engines search over it.
"""

from __future__ import annotations

import copy
import enum
import itertools
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError, UsageError
from .declare import (
    ActionDecl,
    BoolDomain,
    Domain,
    HolderDomain,
    IntRange,
    KeyDomain,
    PageSetDomain,
    Pool,
    PropertyDecl,
    RequestDomain,
    _resolve,
    as_domain,
)
from .sorts import BOOL, INT, PAGES
from .spec import Spec


@dataclass
class SlotInfo:
    """Where a slot lives in the flat state and how its values look."""

    name: str
    shape: str            # "scalar" | "request" | "page" | "array"
    domain: Domain
    offset: int
    length: int
    base: int             # index of the first element: 1 for requests, 0 for pages
    lo: int
    hi: int
    pool: str | None = None
    kernel: bool = False  # a shadow slot of the ownership kernel (ground truth)
    free_list: bool = False
    is_bool: bool = False
    sort: str = "int"     # the sort of its values (ownership.lang.sorts): bool, int or pages

    def element(self, k: int) -> str:
        """Element k (counting from 0) as a spec names it: `x`, `x[r1]`, `x[3]`."""
        if self.shape == "scalar":
            return self.name
        return f"{self.name}[{'r' if self.shape == 'request' else ''}{k + self.base}]"

    def show(self, values: list[int], env: dict[str, int]) -> Any:
        """The slot's values as they appear in a trace: a value, a dict by request, a list."""
        if self.free_list:
            size = self.length
            return [v for v in values if v < size]
        if self.shape == "scalar":
            return self.domain.show(values[0], env)
        if self.shape == "request":
            return {f"r{i + 1}": self.domain.show(v, env) for i, v in enumerate(values)}
        if self.shape == "array":
            return {self.base + i: self.domain.show(v, env) for i, v in enumerate(values)}
        return [self.domain.show(v, env) for v in values]

    def parse(self, x: Any, env: dict[str, int]) -> list[int]:
        """The inverse of `show`; raises ValueError on a value of the wrong shape."""
        if self.free_list:
            if not isinstance(x, list) or len(x) > self.length:
                raise ValueError(f"expected a list of at most {self.length} pages, got {x!r}")
            if any(isinstance(v, bool) or not isinstance(v, int) for v in x):
                raise ValueError(f"expected a list of page numbers (integers), got {x!r}")
            vals = list(x) + [self.length] * (self.length - len(x))
            if any(not 0 <= v <= self.length for v in vals):
                raise ValueError(f"page numbers must be 0..{self.length - 1}, got {x!r}")
            return vals
        if self.shape == "scalar":
            return [self.domain.parse(x, env)]
        if self.shape == "request":
            if not isinstance(x, dict) or sorted(x) != sorted(f"r{i + 1}" for i in range(self.length)):
                raise ValueError(f"expected a value for each of r1..r{self.length}, got {x!r}")
            return [self.domain.parse(x[f"r{i + 1}"], env) for i in range(self.length)]
        if self.shape == "array":
            keys = list(range(self.base, self.base + self.length))
            if not isinstance(x, dict) or sorted(x) != keys:
                raise ValueError(f"expected a value for each of {self.base}..{self.base + self.length - 1}, got {x!r}")
            return [self.domain.parse(x[k], env) for k in keys]
        if not isinstance(x, list) or len(x) != self.length:
            raise ValueError(f"expected a list of {self.length} values, got {x!r}")
        return [self.domain.parse(v, env) for v in x]


@dataclass(frozen=True)
class Binding:
    """An action with concrete arguments: one edge label of the state graph."""

    action: ActionDecl
    args: tuple[int, ...]
    shown: tuple[tuple[str, Any], ...]  # the arguments as they appear in traces

    def label(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.shown)
        return f"{self.action.name}({inner})"


@dataclass
class PoolInfo:
    name: str
    size: int
    order: str
    warm: bool
    shared: bool = False      # holders (a set of requests) instead of one owner
    keys: int | None = None   # content is a spec-chosen key 1..keys instead of a request
    earlier: int = 0          # the content value of KV from before the trace (warm pools)
    counted: int | None = None  # how many references one holder may have (None: a set of holders)
    owners: tuple[str, ...] = ()  # holders that are not requests, after the requests
    pins: bool = False        # holders may pin pages (`{pool}.pins`, laid out like the holders)

    def holders(self) -> HolderDomain:
        """The domain of a page's holders (and pins) in a shared pool."""
        return HolderDomain(self.owners, self.counted)

    def content_name(self, v: int) -> str:
        """A content value in words: a request, a key, never written, or earlier KV."""
        if v == 0:
            return "none"
        if v == self.earlier:
            return "k0" if self.keys is not None else "r0"
        return f"k{v}" if self.keys is not None else f"r{v}"



def _kernel_liveness(names: Any) -> list[str]:
    """Kernel liveness properties switched on for one check (`--liveness NAME`), checked."""
    from ..errors import UsageError
    from .declare import did_you_mean
    from .properties import LIVENESS

    for n in names:
        if n not in LIVENESS:
            raise UsageError(f"--liveness {n!r}: not a liveness property of the kernel; they are:"
                             f" {', '.join(LIVENESS)}." + did_you_mean(str(n), LIVENESS))
    return list(names)


#: The most values one pool, slot or action argument of a model may take: a state holds an
#: integer per page and per request of each slot, so that one state of 2**27 positions alone
#: takes a gigabyte. Parameters above it are refused before anything of that size is built
#: (a pool of 10**11 pages would hang the command in one allocation, past Ctrl-C and limits).
MAX_LAYOUT = 2**27


class Model:
    """A spec at concrete parameters and fixes: layout, initial state, bindings, properties."""

    def __init__(self, spec: Spec, *, skip: Any = (), liveness: Any = (), only: Any = ()) -> None:
        self.spec = spec
        self.spec_cls = type(spec)
        self.env = dict(spec.env)
        self.requests = self.env["requests"]
        #: content value meaning "KV of an earlier request, from before the trace" (warm pools)
        self.earlier = self.requests + 1
        self.pools: dict[str, PoolInfo] = {}
        for name, p in self.spec_cls._pools.items():
            size = p.size(self.env)
            self._fits(f"pool {name}", size, "pages")
            if size < 1:
                raise SpecError(f"pool {name} has {size} pages; a pool needs at least one page",
                                file=self.spec_cls.source_file())
            keys = None if p.keys is None else _resolve(p.keys, self.env)
            earlier = (keys if keys is not None else self.requests) + 1
            counted = None if p.counted is None else _resolve(p.counted, self.env)
            if counted is not None and counted < 1:
                raise SpecError(f"pool {name}: counted={p.counted!r} is {counted}; a holder may hold a page at"
                                " least once (counted=1 or more)", file=self.spec_cls.source_file())
            self.pools[name] = PoolInfo(name, size, p.order, p.warm, p.shared, keys, earlier, counted, p.owners, p.pins)
        self.slots: list[SlotInfo] = []
        self.by_name: dict[str, SlotInfo] = {}
        init: list[int] = []
        for name, slot in self.spec_cls._slots.items():
            domain = as_domain(slot.domain_decl, f"slot {name}")
            if slot.shape == "scalar":
                length, base = 1, 0
            elif slot.shape == "request":
                length, base = self.requests, 1
            elif slot.shape == "array":
                lo, hi = as_domain(slot.over, f"slot {name}, index").bounds(self.env)
                length, base = max(hi - lo + 1, 0), lo
            else:
                over = slot.over
                if not isinstance(over, Pool):
                    raise SpecError(f"slot {name}: per_page needs a pool, got {over!r}", file=self.spec_cls.source_file())
                length, base = over.size(self.env), 0
            self._fits(f"slot {name}", length, "values")
            if callable(slot.init) and not isinstance(slot.init, type):
                # one initial value per element: init(index), e.g. a free list 0, 1, 2, ...
                values = [_init_value(slot.init(base + k), self.env, name) for k in range(length)]
            else:
                values = [_init_value(slot.init, self.env, name)] * length
            self._add(SlotInfo(name, slot.shape, domain, 0, length, base, 0, 0), values, init)
        for pname, info in self.pools.items():
            content: Domain = RequestDomain(none="none", earlier="r0")
            if info.keys is not None:
                content = KeyDomain(info.keys)
            transfer = RequestDomain(none="none")
            warm = info.earlier if info.warm else 0
            if info.shared:
                self._add(SlotInfo(f"{pname}.holders", "page", info.holders(), 0, info.size, 0, 0, 0, pname, True),
                          [0] * info.size, init)
                if info.pins:
                    self._add(SlotInfo(f"{pname}.pins", "page", info.holders(), 0, info.size, 0, 0, 0, pname, True),
                              [0] * info.size, init)
            else:
                self._add(SlotInfo(f"{pname}.owner", "page", RequestDomain(none="free"), 0, info.size, 0, 0, 0, pname, True),
                          [0] * info.size, init)
            self._add(SlotInfo(f"{pname}.content", "page", content, 0, info.size, 0, 0, 0, pname, True), [warm] * info.size, init)
            self._add(SlotInfo(f"{pname}.inflight", "page", transfer, 0, info.size, 0, 0, 0, pname, True), [0] * info.size, init)
            self._add(SlotInfo(f"{pname}.outbound", "page", transfer, 0, info.size, 0, 0, 0, pname, True), [0] * info.size, init)
            if info.keys is not None:  # the key a transfer in flight writes into the page (0: none)
                self._add(SlotInfo(f"{pname}.incoming", "page", KeyDomain(info.keys), 0, info.size, 0, 0, 0, pname, True),
                          [0] * info.size, init)
            if info.order == "lifo":
                fl = SlotInfo(f"{pname}.free_list", "page", IntRange(0, info.size), 0, info.size, 0, 0, 0, pname, True, True)
                self._add(fl, list(range(info.size)), init)
        self.initial: tuple[int, ...] = tuple(init)
        self.width = len(init)
        self.bindings: list[Binding] = self._bindings()
        #: each binding by its label as a trace shows it: (action, its argument values)
        self._by_label: dict[tuple[str, tuple[Any, ...]], Binding] = {
            (b.action.name, tuple(v for _, v in b.shown)): b for b in self.bindings}
        self.invariants: list[PropertyDecl] = [p for p in self.spec_cls._properties.values() if p.kind == "invariant"]
        self.sometimes: list[PropertyDecl] = [p for p in self.spec_cls._properties.values() if p.kind == "sometimes"]
        #: liveness properties: the spec's own (@eventually, @leads_to), then the kernel's it names
        self.liveness: list[PropertyDecl] = [p for p in self.spec_cls._properties.values()
                                             if p.kind in ("eventually", "leads-to")]
        #: the kernel's liveness properties checked: those the spec names, then those switched
        #: on for this check (`--liveness NAME`)
        self.kernel_liveness: list[str] = list(dict.fromkeys([*self.spec_cls.liveness, *_kernel_liveness(liveness)]))
        #: leads_to(within=N): the bound of each, resolved at these parameters
        self.within: dict[str, int] = {p.name: _bound(p, self.env) for p in self.liveness if p.within is not None}
        self.measures: list[PropertyDecl] = [p for p in self.spec_cls._properties.values() if p.kind == "measure"]
        self.checks_leak = self.spec_cls.checks_leak()
        #: whether some action can crash (`s.crash`): set when the actions are traced
        #: (ownership.interpret.validate.build_model); the property `crash` is listed only then
        self.can_crash = False
        #: properties the user chose not to check (`--skip`), to see past an early one; or
        #: (`--only`) the only ones to check, every other one skipped
        from .properties import CRASH

        self.only: frozenset[str] = self._named(only, "--only")
        if self.only and skip:
            raise UsageError("--only and --skip name the properties to check in two ways: give one of them"
                             f" (--only {' --only '.join(sorted(self.only))} checks those alone)")
        self.skip: frozenset[str] = self._named(skip, "--skip") if not self.only else frozenset(
            set(self.property_names()) - self.only | ({CRASH} - self.only))

    def binding_of(self, action: str | None, values: tuple[Any, ...]) -> Binding | None:
        """The binding a trace step names (its action and its arguments' values as shown), or
        None when the spec has no such action with these arguments (or a value is unhashable)."""
        try:
            found = self._by_label.get((action or "", values))
        except TypeError:
            return None
        # (Python's True == 1: a boolean names no binding of an integer argument, nor the other way)
        if found is not None and any(isinstance(v, bool) is not isinstance(shown, bool)
                                     for v, (_, shown) in zip(values, found.shown)):
            return None
        return found

    def property_names(self) -> list[str]:
        """Every property that can be checked: the kernel's, the spec's invariants, then the
        liveness properties (the spec's, the kernel's it names)."""
        from .properties import LEAK, PROPERTIES

        kernel = [p for p in PROPERTIES if self.models(p) and (p != LEAK or self.checks_leak)]
        return kernel + [p.name for p in self.invariants] + self._liveness_names()

    def models(self, prop: str) -> bool:
        """Whether this spec has kernel property `prop` at all: `crash` where an action can
        crash, `free-pinned` where a pool keeps pins, `count-below-zero` where one counts
        references or keeps pins; every other always (`leak` is listed, checked or not)."""
        from .properties import COUNT_BELOW_ZERO, CRASH, FREE_PINNED

        pins = any(p.pins for p in self.pools.values())
        if prop == FREE_PINNED:
            return pins
        if prop == COUNT_BELOW_ZERO:
            return pins or any(p.counted is not None for p in self.pools.values())
        return prop != CRASH or self.can_crash

    def _liveness_names(self) -> list[str]:
        return [p.name for p in self.liveness] + self.kernel_liveness

    def liveness_checked(self) -> list[str]:
        """The liveness properties this model checks (not skipped)."""
        return [n for n in self._liveness_names() if n not in self.skip]

    def kernel_obligations(self) -> list[KernelObligation]:
        """The kernel's liveness properties this model checks, one per page of each pool."""
        from .properties import EVENTUALLY_RELEASED

        checked = set(self.liveness_checked())
        out = []
        for name in self.kernel_liveness:
            if name not in checked:
                continue
            field = "owner" if name == EVENTUALLY_RELEASED else "inflight"
            what, goal = ("owned", "free") if name == EVENTUALLY_RELEASED else ("the target of a transfer in flight", "landed")
            for pool, info in self.pools.items():
                names = (f"{pool}.{field}",) + ((f"{pool}.holders",) if field == "owner" else ())
                slot = next(s for s in self.slots if s.name in names)  # a shared pool keeps holders
                for page in range(info.size):
                    out.append(KernelObligation(name, pool, page, slot.offset + page,
                                                f"{pool} page {page} is {what}", f"{pool} page {page} is {goal}"))
        return out

    def action_counts(self, per_binding: Any) -> tuple[tuple[str, int], ...]:
        """Transitions per action, in declaration order, from the transitions per binding (an
        action without a binding at these parameters: 0)."""
        counts = dict.fromkeys(self.spec_cls._actions, 0)
        for binding, n in zip(self.bindings, per_binding):
            counts[binding.action.name] += int(n)
        return tuple(counts.items())

    def fairness(self) -> list[tuple[str, str]]:
        """The fair actions: (name, "weak" | "strong"), in declaration order."""
        return [(d.name, d.fair) for d in self.spec_cls._actions.values() if d.fair]

    def _named(self, names: Any, flag: str) -> frozenset[str]:
        """The properties named by --skip or --only, each checked to be one of the spec's."""
        from .declare import did_you_mean
        from .properties import CRASH

        known = self.property_names()
        for name in names:
            if name not in known and name != CRASH:  # (crash: known once the actions are traced)
                raise UsageError(f"{flag} {name!r}: no such property of {self.spec_cls.__name__}."
                                 + did_you_mean(name, known) + f" Properties: {', '.join(known)}.")
        return frozenset(names)

    def leaving_out(self, names: Any) -> Model:
        """This model with the properties `names` not checked too (a shallow copy: the layout,
        bindings and traced actions are shared): `prove` leaves liveness to `check`."""
        other = copy.copy(self)
        other.skip = self.skip | frozenset(names)
        return other

    def checked(self) -> list[str]:
        """The safety properties this model checks (liveness_checked() says the rest)."""
        live = set(self._liveness_names())
        return [p for p in self.property_names() if p not in self.skip and p not in live]

    def _add(self, info: SlotInfo, values: list[int], init: list[int]) -> None:
        info.offset = len(init)
        info.lo, info.hi = info.domain.bounds(self.env)
        info.is_bool = isinstance(info.domain, BoolDomain)
        info.sort = BOOL if info.is_bool else PAGES if isinstance(info.domain, PageSetDomain) else INT
        for v in values:
            if not info.lo <= v <= info.hi:
                raise SpecError(
                    f"slot {info.name}: initial value {v} is outside its domain {info.lo}..{info.hi}",
                    file=self.spec_cls.source_file(),
                )
        init.extend(values)
        self.slots.append(info)
        self.by_name[info.name] = info

    def _fits(self, what: str, count: int, unit: str,
              why: str = "one state of that size alone takes gigabytes") -> None:
        """Refuse parameters that make `what` larger than any machine can lay out (MAX_LAYOUT)."""
        if count > MAX_LAYOUT:
            given = " ".join(f"{k}={v}" for k, v in self.env.items())
            raise UsageError(
                f"{what} has {count:,} {unit} at parameters {given}: more than the {MAX_LAYOUT:,} that"
                f" ownership lays out ({why}); give smaller parameters with --param")

    def _bindings(self) -> list[Binding]:
        out: list[Binding] = []
        for decl in self.spec_cls._actions.values():
            domains = [as_domain(d, f"action {decl.name}, argument {a}") for a, d in decl.args]
            count = 1
            for d in domains:  # (counted before any list of them is made)
                lo, hi = d.bounds(self.env)
                count *= max(hi - lo + 1, 0) if type(d).values is Domain.values else len(d.values(self.env))
                self._fits(f"action {decl.name}", count, "bindings (combinations of its arguments)",
                           "each is a step tried from every state")
            choices = [d.values(self.env) for d in domains]
            for combo in itertools.product(*choices):
                shown = tuple((a, d.show(v, self.env)) for (a, _), d, v in zip(decl.args, domains, combo))
                # an argument declared bool reaches the action as a condition (True, False), not 0 or 1
                args = tuple(bool(v) if isinstance(d, BoolDomain) else v for d, v in zip(domains, combo))
                out.append(Binding(decl, args, shown))
        return out

    # -- showing states ----------------------------------------------------------------------

    def show(self, state: tuple[int, ...]) -> dict[str, Any]:
        """A state as named values, in slot order (the form traces store)."""
        return {
            s.name: s.show(list(state[s.offset:s.offset + s.length]), self.env) for s in self.slots
        }

    def parse(self, values: dict[str, Any]) -> tuple[int, ...]:
        """The inverse of `show`; raises ValueError naming the slot that does not fit."""
        out: list[int] = []
        missing = [s.name for s in self.slots if s.name not in values]
        if missing:
            raise ValueError(f"the state lacks {', '.join(missing)}")
        for s in self.slots:
            try:
                out.extend(s.parse(values[s.name], self.env))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{s.name}: {e}") from None
        return tuple(out)

    def holder_name(self, pool: str | None, v: int) -> str:
        """A holder as a flag names it: a request, or (-k-1) the k-th owner of the pool."""
        if v < 0 and pool is not None and -v <= len(self.pools[pool].owners):
            return self.pools[pool].owners[-v - 1]
        return self.request_name(v)

    def request_name(self, r: int) -> str:
        if r == self.earlier:
            return "r0"
        return f"r{r}" if r else "none"

    def describe(self) -> str:
        params = " ".join(f"{k}={v}" for k, v in self.env.items())
        return params


def _init_value(init: Any, env: dict[str, int], name: str) -> int:
    if isinstance(init, bool):
        return int(init)
    if isinstance(init, enum.IntEnum):
        return int(init)
    try:
        return _resolve(init, env)
    except (TypeError, ValueError):
        raise SpecError(f"slot {name}: initial value {init!r} is not an integer") from None


@dataclass
class KernelObligation:
    """A kernel liveness property at one page: whenever the state's position `at` is not 0
    (the page is owned, or the target of a transfer in flight), it is 0 later."""

    name: str
    pool: str
    page: int
    at: int
    text_p: str
    text_q: str


def _bound(prop: PropertyDecl, env: dict[str, int]) -> int:
    """A leads_to bound at concrete parameters (an int, or a parameter expression): 0 or more."""
    from ..errors import SpecError
    from .declare import ParamExpr

    within = prop.within
    n = within.resolve(env) if isinstance(within, ParamExpr) else int(within)
    if n < 0:
        code = prop.fn.__code__
        setting = " ".join(f"{k}={v}" for k, v in env.items())
        raise SpecError(f"property {prop.name}: its bound, within, is {n} at {setting}; a bound is a number of"
                        " steps, 0 or more", file=code.co_filename, line=code.co_firstlineno)
    return n
