"""The fuzz engine: a Hypothesis stateful test generated from a Model, for pools too large to explore.

A `RuleBasedStateMachine` is built here from the spec (users never subclass it). Its rule fires
a burst of steps (NOTE(bursts)) chosen by one draw: a word per step, which picks an enabled
action (as if Hypothesis chose among rules for the enabled actions, with their weights and the
run's swarm flags), its arguments from their finite domains, and the first enabled binding
from there on. After every step the kernel's flags and the state properties (the spec's
invariants, the kernel's leak) are checked, exactly as the explicit engine checks them. Steps
cost what they change: a binding found disabled is known disabled wherever what it read is
unchanged, or has values it was disabled with before (NOTE(disabled-inherited),
NOTE(guard-memo)), and replayed prefixes are looked up (NOTE(memo-by-path)).

A violating run is then shrunk on the level of the model (NOTE(shrink-paths)): steps are
deleted, requests renamed and arguments lowered for as long as the run still violates the
same property, and the result is the same `Trace` as every engine's (engine "fuzz"),
replayable with `ownership replay`.

With `liveness=True` the spec's liveness properties are followed on every run too, bounded
(NOTE(bounded-liveness)): a run is a counterexample only where it is itself a behaviour on
which a property fails (a dead end or a fair cycle with an obligation pending, a bounded
response too late); a run that merely ends with one pending shows nothing.

A pass is never `verified`: the verdict is `bounded` by the runs and steps actually executed,
and the coverage names the actions that never fired. The example database (a directory under
.ownership/ by default) replays known failures first; the "ci" profile is derandomised.
Progress goes to a reporter; this module never prints (Hypothesis's own output is captured).
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from hypothesis.errors import InvalidArgument
from hypothesis.reporting import with_reporter
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test, rule

from ..errors import InternalError, LimitReached, SpecError, UsageError
from ..interpret.concrete import Concrete, Flag, Judged, flags_of
from ..interpret.store import CHUNK, CHUNK_BITS, LOW, Key, Packed
from ..kernel import PROPERTIES
from ..lang.declare import RequestDomain, as_domain
from ..lang.model import Binding, Model
from ..progress import Progress, Reporter
from ..result import CheckResult, Coverage, Verdict
from ..trace import Trace, build_trace

#: Runs (Hypothesis examples) and steps per run when the caller does not say.
DEFAULT_RUNS = 200
DEFAULT_STEPS = 50

#: Steps of the model one Hypothesis rule fires at most, and the bytes of its draw each step
#: takes (a 64-bit word): NOTE(bursts).
BURST = 16
WORD = 8

#: How long shrinking a violation may take before the run found so far is reported as it is.
DEFAULT_SHRINK_SECONDS = 120.0

#: Where the example database lives unless told otherwise (relative to the working directory).
DEFAULT_DATABASE = Path(".ownership") / "examples"

#: Settings profiles by name. "default": a fresh random seed per check (reported, so a run can
#: be repeated with `seed=`) and the example database. "ci": derandomised (the same runs on
#: every machine for the same model), no database. Both start from Hypothesis's own "default"
#: profile, not from the one loaded: Hypothesis loads its "ci" profile (derandomised, no
#: database) by itself when it sees a CI variable such as CI=true, and "default" would then
#: silently mean "ci" (NOTE(ci-profile)).
PROFILES: dict[str, dict[str, Any]] = {
    "default": {"derandomize": False},
    "ci": {"derandomize": True},
}

#: How a caller asks for the default database (None switches the database off).
USE_DEFAULT_DATABASE = "default"




@dataclass(frozen=True)
class Seen:
    """What one check covered, as sets, so that several checks can be merged (the swarm of
    ownership.engines.swarm): set by `check` as `result.seen`. `states` are the hashes of the
    states reached (a Packed state's hash, ownership.interpret.store: the same in every process)."""

    states: frozenset[int] = frozenset()
    fired: frozenset[str] = frozenset()
    enabled: frozenset[str] = frozenset()
    tried: frozenset[str] = frozenset()  # actions whose enabledness was looked at
    #: per liveness property followed: Obligations.counts() (kind, runs pending, runs ended pending)
    liveness: dict[str, tuple[str, int, int]] = field(default_factory=dict)


class RunFailed(Exception):
    """Raised inside a Hypothesis run when a step fails; carries the path (binding indices)."""

    def __init__(self, kind: str, path: tuple[int, ...], detail: Any = None) -> None:
        super().__init__(f"{kind} at step {len(path)}")
        self.kind = kind
        self.path = path
        self.detail = detail


class TimeUp(KeyboardInterrupt):
    """Raised inside a run when max_seconds has passed: it ends the Hypothesis search at once.

    A KeyboardInterrupt, because that is the one exception Hypothesis lets through without
    recording the cut-short run (any other would be taken for a failure, or recorded and then
    refused as flaky data generation: the clock is external state)."""


def primary(flags: list[Flag]) -> str:
    """The property a set of flags is reported as: the first in the order of PROPERTIES."""
    order = list(PROPERTIES)
    return min((f.prop for f in flags), key=lambda p: (order.index(p) if p in order else len(order), p))


# --------------------------------------------------------------------------- the model side


@dataclass
class ActionSlice:
    """An action's bindings in model.bindings: [lo, hi), the row-major product of its domains."""

    name: str
    lo: int
    hi: int
    sizes: list[int]           # number of values of each argument
    requests: list[bool]       # which arguments are requests


def action_slices(model: Model) -> list[ActionSlice]:
    """Per action, in declaration order, where its bindings lie and how they are laid out."""
    out = []
    lo = 0
    for decl in model.spec_cls._actions.values():
        domains = [as_domain(d, f"action {decl.name}, argument {a}") for a, d in decl.args]
        sizes = [len(d.values(model.env)) for d in domains]
        n = 1
        for k in sizes:
            n *= k
        requests = [isinstance(d, RequestDomain) for d in domains]
        out.append(ActionSlice(decl.name, lo, lo + n, sizes, requests))
        lo += n
    assert lo == len(model.bindings), "bindings are laid out per action, in declaration order"
    return out


def _node_bytes(model: Model) -> int:
    """About what one more node of the memo costs (NOTE(memo-by-path)): its chunk table, a
    few chunks and page sets its step changed, and the node itself."""
    pages = max((p.size for p in model.pools.values()), default=0)
    return 8 * (model.width // CHUNK + 1) + 4 * 8 * CHUNK + 6 * (pages // 8) + 1000


def _unrank(sl: ActionSlice, b: int) -> list[int]:
    """The argument indices of binding b of an action."""
    k = b - sl.lo
    out = []
    for size in reversed(sl.sizes):
        out.append(k % size)
        k //= size
    return out[::-1]


def _rank(sl: ActionSlice, picks: list[int]) -> int:
    k = 0
    for value, size in zip(picks, sl.sizes):
        k = k * size + value
    return sl.lo + k


class Node:
    """A state reached by a path of bindings from the initial state, with what is known there.

    NOTE(disabled-inherited): a binding's step is a function of the values it reads
    (ownership.interpret.concrete.ConcreteStore logs them), so a binding found disabled in
    the predecessor, with what it read before its guard failed, is disabled here too when
    the step from there wrote none of it; so is a state property's verdict (an invariant's,
    a request's leak) kept. `before` holds the predecessor's disabled bindings and judged
    properties and the step's writes, until this node is asked."""

    __slots__ = ("packed", "flags", "state_flags", "judged", "disabled", "first", "live", "before")

    def __init__(self, packed: Packed, flags: list[Flag], before: Before | None = None) -> None:
        self.packed = packed                        # the state (ownership.interpret.store)
        self.flags = flags                          # kernel flags of the step into this state
        self.state_flags: list[Flag] | None = None  # invariants and leak, once computed
        self.judged: list[Judged] | None = None     # ... one property at a time
        self.disabled: dict[int, frozenset[Key]] = {}  # bindings not enabled here -> what they read
        self.first: dict[int, int | None] = {}      # action -> its first enabled binding here
        self.live: tuple[tuple[bool, bool], ...] | None = None  # (p, q) of each obligation, once computed
        self.before = before

    @property
    def state(self) -> tuple[int, ...]:
        """The state as a flat tuple (as every engine and trace knows it)."""
        return self.packed.flat()

    def known_disabled(self) -> dict[int, frozenset[Key]]:
        """The bindings known to be disabled here (NOTE(disabled-inherited))."""
        before = self.before
        if before is not None and before.disabled is not None:
            writes = before.writes
            self.disabled = {b: reads for b, reads in before.disabled.items() if reads.isdisjoint(writes)}
            before.disabled = None
        return self.disabled


@dataclass
class Before:
    """What a node inherits from its predecessor (NOTE(disabled-inherited)), until used."""

    disabled: dict[int, frozenset[Key]] | None
    judged: list[Judged] | None
    writes: frozenset[Key]


class Explorer:
    """Runs a model along paths of bindings, remembering states by path.

    NOTE(memo-by-path): a run is a function of its path (the bindings fired from the initial
    state), and Hypothesis and the shrinker replay the same prefixes again and again. Keying
    on the path (short tuples of small ints) rather than on the state (a tuple of thousands
    of ints at large pools) makes a replayed step cost a dict look-up. The memo is bounded by
    a memory budget: a state shares its unchanged chunks with its predecessor
    (ownership.interpret.store), so a node costs about its chunk table and what its step
    changed, some 50 kB at 65,536 pages.

    NOTE(guard-memo): NOTE(disabled-inherited) carries a binding's disabledness along one
    step; the same reason carries it across states. A step is a function of the values it
    reads, so a binding disabled in one state, having read keys K there, is disabled in every
    state whose values at K are the same: it reads the same values in the same order, takes
    the same branches and fails the same guard, and raises no spec error, as it raised none
    there (a value written before the guard is the same too, and reads after it are of the
    written value or stricter). The values of K are looked up in the Packed state (positions
    in its chunks, a page slot's pages of one value in its groups); K with a whole slot or a
    free list, or with a page set not computed in the state, is stepped as before. Without it,
    a request that steps re-runs every guard of its other actions (8 requests of sglang_pd:
    about 3 disabled steps a step), though a request's stages repeat. Bounded per binding by
    GUARD_KEYS keys and GUARD_VALUES sets of values (the memory it may take).

    `generic_kernel`: the concrete interpreter runs the kernel's generic definition
    (Concrete's `generic_kernel`: the same runs, slower)."""

    def __init__(self, model: Model, budget_bytes: int = 256 * 2**20, *, generic_kernel: bool = False) -> None:
        self.model = model
        self.interp = Concrete(model, generic_kernel=generic_kernel)
        self.slices = action_slices(model)
        self.limit = max(64, budget_bytes // min(8 * model.width + 200, _node_bytes(model)))
        self.nodes: OrderedDict[tuple[int, ...], Node] = OrderedDict()
        self.root = Node(self.interp.packed(model.initial), [])
        self.flags_at(self.root)
        #: per binding, the values it read where it was disabled (NOTE(guard-memo)): what it
        #: read -> (the same keys in a fixed order, the values seen there)
        self.guards: dict[int, dict[frozenset[Key], tuple[tuple[Key, ...], set[tuple[int, ...]]]]] = {}
        self.guard_bytes = 0  # about what self.guards holds
        #: the positions of free lists, stale in a Packed state's chunks (its values are its lists)
        self.stale = [(info.offset, info.offset + info.length) for info in model.slots if info.free_list]

    #: NOTE(guard-memo): a binding's values are remembered for reads of at most this many keys,
    #: for at most this many sets of values per binding, and in all for about this many bytes
    #: (a page set is an int of a bit a page: 8 kB at 65,536 pages)
    GUARD_KEYS = 64
    GUARD_VALUES = 1024
    GUARD_BYTES = 64 * 2**20

    def _values(self, packed: Packed, keys: tuple[Key, ...]) -> tuple[int, ...] | None:
        """The values of `keys` in `packed` (NOTE(guard-memo)), None if one is not at hand
        there: a whole slot or free list, a position of a free list, a page set not computed."""
        chunks = packed.chunks
        out = []
        for k in keys:
            if type(k) is int:
                out.append(chunks[k >> CHUNK_BITS][k & LOW])
            elif type(k) is tuple:
                groups = packed.groups.get(k[0])
                if groups is None:
                    return None
                out.append(groups.get(k[1], 0))
            else:
                return None
        return tuple(out)

    def _memo_keys(self, reads: frozenset[Key]) -> tuple[Key, ...] | None:
        """`reads` in a fixed order, if the guard memo can hold them (NOTE(guard-memo))."""
        if len(reads) > self.GUARD_KEYS:
            return None
        for k in reads:
            if type(k) is str:
                return None
            if type(k) is int and self.stale and any(lo <= k < hi for lo, hi in self.stale):
                return None
        return tuple(reads)

    def _remember(self, packed: Packed, b: int, reads: frozenset[Key]) -> None:
        """Binding b is disabled in `packed`, where it read `reads` (NOTE(guard-memo))."""
        memo = self.guards.setdefault(b, {})
        entry = memo.get(reads)
        if entry is None:
            entry = memo[reads] = (self._memo_keys(reads) or (), set())  # (): reads the memo cannot hold
        keys, seen = entry
        if keys and len(seen) < self.GUARD_VALUES and self.guard_bytes < self.GUARD_BYTES:
            values = self._values(packed, keys)
            if values is not None and values not in seen:
                seen.add(values)
                self.guard_bytes += 64 + 8 * len(values) + sum(v.bit_length() >> 3 for v in values)

    def child(self, path: tuple[int, ...], node: Node, b: int) -> Node | None:
        """The node reached by firing binding b at `node` (reached by `path`), None if disabled."""
        disabled = node.known_disabled()
        if b in disabled:
            return None
        key = path + (b,)
        found = self.nodes.get(key)
        if found is not None:
            self.nodes.move_to_end(key)
            return found
        memo = self.guards.get(b)
        if memo is not None:
            for reads, (keys, seen) in memo.items():
                if keys and self._values(node.packed, keys) in seen:
                    disabled[b] = reads  # (what the step would read here: NOTE(guard-memo))
                    return None
        out = self.interp.step_packed(node.packed, self.model.bindings[b])
        if out.state is None:
            disabled[b] = out.reads
            self._remember(node.packed, b, out.reads)
            return None
        found = Node(out.state, out.flags, Before(disabled, node.judged, out.writes))
        self.nodes[key] = found
        if len(self.nodes) > self.limit:
            self.nodes.popitem(last=False)
        return found

    def flags_at(self, node: Node) -> list[Flag]:
        """Every violation on arriving at `node`: the step's kernel flags, then state properties."""
        if node.flags:
            return node.flags
        if node.state_flags is None:
            before = node.before
            if before is None:
                node.judged = self.interp.judge(node.packed)
            else:
                node.judged = self.interp.judge(node.packed, before.judged, before.writes)
                before.judged = None
            node.state_flags = flags_of(node.judged)
        return node.state_flags

    def scan(self, path: tuple[int, ...], node: Node, a: int, start: int) -> int | None:
        """The first enabled binding of action a at or after `start`, wrapping around."""
        sl = self.slices[a]
        lo = sl.lo
        n = sl.hi - lo
        disabled = node.known_disabled()  # (what child() looks at first, looked up once)
        for k in range(start - lo, start - lo + n):
            b = lo + k % n
            if b not in disabled and self.child(path, node, b) is not None:
                return b
        return None

    def first_enabled(self, path: tuple[int, ...], node: Node, a: int) -> int | None:
        if a not in node.first:
            node.first[a] = self.scan(path, node, a, self.slices[a].lo)
        return node.first[a]

    def walk(self, path: tuple[int, ...]) -> tuple[list[Node], list[Flag]] | None:
        """Replay a path: its nodes up to the first violation and that violation's flags
        (empty if none), or None when a binding is not enabled on the way."""
        node = self.root
        nodes = [node]
        if node.state_flags:
            return nodes, node.state_flags
        for i, b in enumerate(path):
            nxt = self.child(path[:i], node, b)
            if nxt is None:
                return None
            node = nxt
            nodes.append(node)
            flags = self.flags_at(node)
            if flags:
                return nodes, flags
        return nodes, []


# --------------------------------------------------------------------------- shrinking paths


class PathShrinker:
    """Shrinks a failing path of bindings while it keeps failing the same way.

    NOTE(shrink-paths): Hypothesis shrinks choice sequences, and every candidate costs a whole
    run with its rule selection; at thousands of pages that took minutes. A path is shrunk
    here instead, by replaying candidates through a judge: delete chunks of steps (ddmin),
    delete two steps apart, delete a step while moving an earlier one into its place, rename requests to r1, r2, ...
    in order of appearance, and lower each argument, keeping
    a candidate when it still fails with the same kind (the same property). Prefixes are
    cheap to replay (NOTE(memo-by-path)). The result is locally minimal, not shortest."""

    def __init__(self, slices: list[ActionSlice], judge: Callable[[tuple[int, ...]], RunFailed | None],
                 *, deadline: float | None, on_try: Callable[[], None] | None = None) -> None:
        self.slices = slices
        self.judge = judge
        self.deadline = deadline
        self.on_try = on_try
        self.tries = 0
        self.timed_out = False
        self.best: RunFailed | None = None  # the shortest failure so far (kept if interrupted)
        self.owner = [0] * (slices[-1].hi if slices else 0)
        for a, sl in enumerate(slices):
            self.owner[sl.lo:sl.hi] = [a] * (sl.hi - sl.lo)

    def _late(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.timed_out = True
        return self.timed_out

    def _try(self, best: RunFailed, path: tuple[int, ...]) -> RunFailed | None:
        self.tries += 1
        if self.on_try is not None:
            self.on_try()
        got = self.judge(path)
        if got is not None and got.kind == best.kind and len(got.path) <= len(best.path):
            self.best = got
            return got
        return None

    def shrink(self, failure: RunFailed) -> RunFailed:
        best = self.best = failure
        while not self._late():
            before = best.path
            best = self._delete_chunks(best)
            best = self._delete_pairs(best)
            best = self._delete_and_move(best)
            best = self._rename_requests(best)
            best = self._lower_arguments(best)
            if best.path == before:
                break
        return best

    #: _delete_and_move tries every pair of steps on paths up to this long (n^2 replays)
    MOVE_PAIRS_UP_TO = 24

    def _delete_pairs(self, best: RunFailed) -> RunFailed:
        """Delete two steps that are not next to each other (a request's alloc and its free,
        with another request's step between them), on paths up to MOVE_PAIRS_UP_TO long."""
        j = len(best.path) - 1
        while j >= 2 and len(best.path) <= self.MOVE_PAIRS_UP_TO and not self._late():
            for i in range(j - 1):
                if self._late():
                    return best
                path = best.path
                got = self._try(best, path[:i] + path[i + 1:j] + path[j + 1:])
                if got is not None:
                    best = got
                    break
            j = min(j, len(best.path)) - 1
        return best

    def _delete_and_move(self, best: RunFailed) -> RunFailed:
        """Delete step j and move an earlier step i into its place: a step that only set up a
        later one (r2 allocating early, then extending into the page r1 freed) becomes that
        later one (r2 allocating the page then). Deleting alone cannot find it: without the
        early step the later one is not enabled."""
        j = len(best.path) - 1
        while j >= 1 and len(best.path) <= self.MOVE_PAIRS_UP_TO and not self._late():
            for i in range(j):
                if self._late():
                    return best
                path = list(best.path)
                moved = path[i]
                del path[j]
                del path[i]
                path.insert(j - 1, moved)
                got = self._try(best, tuple(path))
                if got is not None:
                    best = got
                    break
            j = min(j, len(best.path)) - 1
        return best

    #: chunks of up to this many steps are tried at every position (larger ones at multiples
    #: of their size, halving): a step and the step that undoes it (an alloc and its free)
    #: go together, and halving from 3 would never try 2
    SMALL_CHUNKS = 4

    def _delete_chunks(self, best: RunFailed) -> RunFailed:
        sizes = []
        chunk = max(1, len(best.path) // 2)
        while chunk > self.SMALL_CHUNKS:
            sizes.append(chunk)
            chunk //= 2
        sizes += list(range(min(self.SMALL_CHUNKS, len(best.path)), 0, -1))
        for chunk in sizes:
            step = chunk if chunk > self.SMALL_CHUNKS else 1
            i = len(best.path) - chunk
            while i >= 0 and not self._late():
                path = best.path
                got = self._try(best, path[:i] + path[i + chunk:])
                if got is not None:
                    best = got
                i = min(i, len(best.path) - chunk) if got is not None else i - step
            if self._late():
                break
        return best

    def _rename_requests(self, best: RunFailed) -> RunFailed:
        order: dict[int, int] = {}
        for b in best.path:
            sl = self.slices[self.owner[b]]
            for v, is_req in zip(_unrank(sl, b), sl.requests):
                if is_req and v not in order:
                    order[v] = len(order)
        if all(k == v for k, v in order.items()) or self._late():
            return best
        renamed = []
        for b in best.path:
            sl = self.slices[self.owner[b]]
            picks = [order[v] if is_req else v for v, is_req in zip(_unrank(sl, b), sl.requests)]
            renamed.append(_rank(sl, picks))
        return self._try(best, tuple(renamed)) or best

    def _lower_arguments(self, best: RunFailed) -> RunFailed:
        i = 0
        while i < len(best.path) and not self._late():
            b = best.path[i]
            sl = self.slices[self.owner[b]]
            picks = _unrank(sl, b)
            for k in range(len(picks)):
                for lower in range(picks[k]):
                    if self._late():
                        return best
                    cand = list(picks)
                    cand[k] = lower
                    path = best.path[:i] + (_rank(sl, cand),) + best.path[i + 1:]
                    got = self._try(best, path)
                    if got is not None:
                        best = got
                        picks = cand
                        break
            i += 1
        return best


# --------------------------------------------------------------------------- liveness, bounded


@dataclass
class LiveFailure:
    """A liveness obligation that a run shows failing: which one, the step of its trigger,
    and the step the run loops back to (NOTE(bounded-liveness))."""

    name: str          # the property
    instance: int      # index into Obligations.instances
    trigger: int       # the step at which the obligation began (p held, q did not)
    loop: int | None   # the last step equals this one (== the last step: a dead end); None:
                       # a finite run on which a bounded response came too late


class Obligations:
    """The liveness obligations of a model on fuzz's runs, evaluated state by state with the
    semantics of ownership.engines.liveness (its `instances`, on one state at a time).

    NOTE(bounded-liveness): a random run shows a liveness property failing only where the
    run is itself a behaviour on which it fails: it stops at a dead end (no action enabled)
    with an obligation pending; it comes back to a state with q false all along, around a
    cycle that takes every fair binding it must (weak: enabled in all its states; strong:
    in one); or, for `leads_to(within=N)`, q does not hold in the N steps after p. A run
    that ends with an obligation still pending shows nothing (q may hold one step later):
    "not satisfied within N steps" is bounded, never violated. Every failure reported is
    replayed with liveness.violates first; one that does not violate there is our bug."""

    def __init__(self, model: Model, explorer: Explorer) -> None:
        from . import liveness

        self.model = model
        self.explorer = explorer
        self.evaluate = liveness.instances
        self.one_state = liveness.Graph.of_states
        self.instances = self.evaluate(model, explorer.interp, self.one_state([model.initial]))
        self.bounds = [model.within.get(inst.name) for inst in self.instances]
        self.eventually = [inst.kind == "eventually" for inst in self.instances]  # p: the initial state only
        self.fair = [(b, binding.action.fair) for b, binding in enumerate(model.bindings) if binding.action.fair]
        names = model.liveness_checked()
        self.pending_runs = dict.fromkeys(names, 0)   # counted runs in which it was pending at some step
        self.ended_pending = dict.fromkeys(names, 0)  # counted runs that ended with it still pending

    def values(self, node: Node) -> tuple[tuple[bool, bool], ...]:
        """(p, q) of every obligation in the state of `node` (computed once per node)."""
        if node.live is None:
            got = self.evaluate(self.model, self.explorer.interp, self.one_state([node.state]))
            if len(got) != len(self.instances):
                raise InternalError("fuzz: the liveness obligations differ from one state to another")
            node.live = tuple((inst.p[0], inst.q[0]) for inst in got)
        return node.live

    def judge(self, path: tuple[int, ...]) -> RunFailed | None:
        """Replay `path` as a run goes: its first violation, of safety or liveness (safety
        first at the same step), cut at the step that shows it; None when there is none, or
        a binding on the way is not enabled."""
        explorer = self.explorer
        run = RunObligations(self)
        node: Node | None = explorer.root
        for i in range(len(path) + 1):
            if i:
                node = explorer.child(path[:i - 1], node, path[i - 1])  # type: ignore[arg-type]
                if node is None:
                    return None
            flags = explorer.flags_at(node)  # type: ignore[arg-type]
            if flags:
                return RunFailed(primary(flags), path[:i], flags)
            got = run.arrive(path[:i], node)  # type: ignore[arg-type]
            if got is not None:
                return RunFailed(got.name, path[:i], got)
        return None

    def trace(self, states: list[tuple[int, ...]], bindings: list[Binding], failure: LiveFailure) -> Trace:
        """The counterexample of `failure` on the run `states`, worded as the explicit engine
        words it; InternalError unless liveness.violates replays it as a violation."""
        from . import liveness

        model = self.model
        inst = self.instances[failure.instance]
        if not liveness.violates(model, states, bindings, failure.loop, inst.name):
            raise InternalError(f"fuzz: the run it found violating {inst.name} ({len(states) - 1} steps, loop"
                                f" {failure.loop}) does not violate it when replayed (liveness.violates)")
        return liveness.lasso_trace(model, inst, states, bindings, failure.loop, failure.trigger, engine="fuzz")

    def ended(self, run: RunObligations, normally: bool) -> None:
        """Count a finished run: the properties pending in it, and those still pending at its end."""
        for name in run.was_pending:
            self.pending_runs[name] += 1
        if normally:
            for name in {self.instances[k].name for k, t in enumerate(run.since) if t is not None}:
                self.ended_pending[name] += 1

    def counts(self) -> dict[str, tuple[str, int, int]]:
        """Per property: its kind, the counted runs in which it was pending, and those that
        ended with it still pending (what `texts` words; a swarm sums them over searches)."""
        kinds = {inst.name: inst.kind for inst in reversed(self.instances)}  # (the first of each name)
        return {name: (kinds.get(name, "leads-to"), pending, self.ended_pending[name])
                for name, pending in self.pending_runs.items()}

    def texts(self, runs: int, steps: int, found: str | None) -> dict[str, str]:
        """What the runs showed of each liveness property, in words (liveness_texts)."""
        return liveness_texts(self.counts(), runs, steps, found)


def liveness_texts(counts: dict[str, tuple[str, int, int]], runs: int, steps: int, found: str | None,
                   *, across: str = "") -> dict[str, str]:
    """What the runs showed of each liveness property, in words: "violated", or how far
    they went without a violation (a bounded answer, never "holds"). `counts`: per property,
    Obligations.counts(); `found`: the property whose violation stopped the search, if any;
    `across`: words after the step bound (a swarm's " across 4 searches")."""
    out = {}
    for name, (kind, pending, ended) in counts.items():
        if name == found:
            out[name] = "violated"
            continue
        text = f"not violated in {runs:,} random run{'' if runs == 1 else 's'} of at most {steps} steps{across}"
        if found:
            out[name] = text + (f", up to the violation of {found} that stopped the search (bounded: fuzz"
                                " cannot show that something never happens)")
            continue
        text += " (bounded: fuzz cannot show that something never happens)"
        if not pending:
            text += ("; its q held from the start of every run" if kind == "eventually"
                     else "; it was never pending (its p never held without its q)")
        else:
            text += (f"; {ended:,} run{'' if ended == 1 else 's'} ended with it pending"
                     f" (of {pending:,} in which it was pending)")
        out[name] = text
    return out


class RunObligations:
    """One run's liveness obligations, followed step by step (NOTE(bounded-liveness)): for
    each, the step since which it is pending (p held there and q has not held since), the
    last step at which its q held, and the steps at which each state was seen."""

    def __init__(self, obligations: Obligations) -> None:
        n = len(obligations.instances)
        self.obligations = obligations
        self.since: list[int | None] = [None] * n
        self.last_q = [-1] * n
        self.nodes: list[Node] = []
        self.seen: dict[Packed, list[int]] = {}
        self.was_pending: set[str] = set()

    def arrive(self, path: tuple[int, ...], node: Node) -> LiveFailure | None:
        """Follow the run into `node`, reached by `path` (step len(path)); the failure the run
        shows there, if any."""
        ob = self.obligations
        u = len(self.nodes)
        self.nodes.append(node)
        since = self.since
        for k, (p, q) in enumerate(ob.values(node)):
            if q:
                self.last_q[k] = u
                since[k] = None
            elif p and since[k] is None and (u == 0 or not ob.eventually[k]):
                since[k] = u
                self.was_pending.add(ob.instances[k].name)
        earlier = self.seen.setdefault(node.packed, [])
        got = self._failure(path, node, u, earlier) if any(t is not None for t in since) else None
        earlier.append(u)
        return got

    def _failure(self, path: tuple[int, ...], node: Node, u: int, earlier: list[int]) -> LiveFailure | None:
        """With some obligation pending at step u: a bounded response too late, a dead end,
        or a fair cycle back to an earlier step with q false around it (in this order)."""
        ob = self.obligations
        since = self.since
        for k, t in enumerate(since):
            bound = ob.bounds[k]
            if t is not None and bound is not None and u - t >= bound:
                return LiveFailure(ob.instances[k].name, k, t, None)  # q false at steps t..t+bound
        explorer = ob.explorer
        if all(explorer.first_enabled(path, node, a) is None for a in range(len(explorer.slices))):
            k = next(k for k, t in enumerate(since) if t is not None)
            return LiveFailure(ob.instances[k].name, k, since[k], u)  # type: ignore[arg-type]
        for i in reversed(earlier):  # the shortest cycle first; a longer one may be fair
            # q must be false from min(trigger, i) to u: since q has not held since the
            # trigger, that is q false since i (fewer obligations qualify as i goes down)
            open_ = [k for k, t in enumerate(since) if t is not None and self.last_q[k] < i]
            if not open_:
                break
            fair: bool | None = None
            for k in open_:
                if ob.bounds[k] is None and fair is None:
                    fair = self._fair(path, i, u)
                if ob.bounds[k] is not None or fair:
                    return LiveFailure(ob.instances[k].name, k, since[k], i)  # type: ignore[arg-type]
        return None

    def _fair(self, path: tuple[int, ...], i: int, u: int) -> bool:
        """Whether the cycle of steps i..u (the state of step u is that of step i) takes every
        fair binding it must: a weakly fair one enabled in all its states, a strongly fair
        one enabled in some."""
        taken = set(path[i:u])
        explorer = self.obligations.explorer
        for b, how in self.obligations.fair:
            if b in taken:
                continue
            enabled = (explorer.child(path[:k], self.nodes[k], b) is not None for k in range(i, u))
            if (all(enabled) if how == "weak" else any(enabled)):
                return False
        return True


# --------------------------------------------------------------------------- the Hypothesis side


@dataclass
class Search:
    """What one check shares between its Hypothesis runs: the explorer, counters, coverage."""

    explorer: Explorer
    start: float
    max_seconds: float | None
    reporter: Reporter | None
    report_every: float
    runs: int = 0
    steps: int = 0
    longest: int = 0
    seen: set[int] = field(default_factory=set)
    fired: set[str] = field(default_factory=set)
    enabled: set[str] = field(default_factory=set)
    tried: set[str] = field(default_factory=set)  # actions whose enabledness was looked at
    pending: list[str] = field(default_factory=list)
    reached: set[str] = field(default_factory=set)
    found: bool = False
    expired: bool = False
    obligations: Obligations | None = None  # liveness followed on the runs (None: not asked, or none)
    last_report: float = 0.0
    phase: str = "search"

    def out_of_time(self) -> bool:
        """True once max_seconds has passed while no failure is known."""
        if self.found or self.max_seconds is None:
            return False
        if time.monotonic() - self.start >= self.max_seconds:
            self.expired = True
        return self.expired

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.reporter is not None and (force or now - self.last_report >= self.report_every):
            self.last_report = now
            self.reporter(Progress(now - self.start, states=len(self.seen), transitions=self.steps,
                                   depth=self.longest, runs=self.runs, phase=self.phase))


class MachineBase(RuleBasedStateMachine):
    """One run of the model: the path so far and the node it reached.

    NOTE(bursts): Hypothesis's own machinery costs about 0.25 ms a rule (choosing a rule, its
    preconditions, the swarm flags, the draws), as much as a step of the model, and its filter
    over preconditions threw most runs away (NOTE(swarm-flags)). So the machine has one rule,
    `burst`, without a precondition, and a rule is a burst of up to `burst_steps` steps
    (bursts(), at most BURST) picked by its one draw: the run's swarm flags (read at its first
    burst), then a word of WORD bytes per step, a list of integers as bytes (one draw, uniform,
    where a list of integers would be a draw per element). Each word picks an action among the
    enabled ones with the probability Hypothesis's choice of a rule gave it (its weight, among
    the enabled actions the swarm flags leave on), then the binding as before (its arguments
    uniform, then the first enabled binding from there on): `choose`. A run is still a function
    of Hypothesis's draws (replayed from the example database, derandomised by the "ci"
    profile), and `steps` still counts steps of the model: stateful_step_count is the number of
    bursts, and a run stops at `max_steps`, at a dead end (no action enabled: the rest of the
    run does nothing, so a finished protocol ends its run quietly), or where Hypothesis stops
    it (between bursts; its own first rule, the first burst, always runs). Bursts of 16: at
    4,096 pages (CPU time, a shared machine) one step a rule ran about 5,000 steps a second,
    bursts of 8 to 25 about 7,000 to 9,000, one burst a run about 6,500 (Hypothesis's
    mutations, which copy spans of a run, then share fewer prefixes: fewer steps are replays,
    more states are new). Subclasses judge each step (`judge_step`); this one
    fails on any violated property; a subclass's `fire` may decline a step (the path does not
    grow), which ends the burst."""

    search: Search
    #: model steps per run at most, and per burst (set by machine_class)
    max_steps: int = DEFAULT_STEPS
    burst_steps: int = DEFAULT_STEPS
    #: each action's weight (machine_class's `weights`, 1 when not named)
    weights: tuple[int, ...] = ()

    def __init__(self) -> None:
        super().__init__()
        search = self.search
        if search.out_of_time():
            raise TimeUp
        # After a failure Hypothesis only replays it (no shrink phase): not counted again.
        self.counted = not search.found
        self.explorer = search.explorer
        self.path: tuple[int, ...] = ()
        self.node = self.explorer.root
        #: the actions in the order `choose` tries them, each group with its weights: the
        #: swarm flags' on actions, then the off ones (NOTE(swarm-flags)); all on until drawn
        self.order: list[tuple[list[int], list[int]]] = [(list(range(len(self.weights))), list(self.weights))]
        self.swarmed = False
        #: the liveness obligations followed on this run (NOTE(bounded-liveness)), if asked
        self.liveness = RunObligations(search.obligations) if search.obligations is not None else None
        if self.liveness is not None:
            got = self.liveness.arrive((), self.node)
            if got is not None:  # (check() judges the initial state before any run)
                self.fail(RunFailed(got.name, (), got))

    def _enabled(self, a: int) -> bool:
        name = self.explorer.slices[a].name
        b = self.explorer.first_enabled(self.path, self.node, a)
        self.search.tried.add(name)
        if b is not None:
            self.search.enabled.add(name)
        return b is not None

    def _steps(self) -> list[str]:
        """The labels of this run's steps so far."""
        return [self.explorer.model.bindings[b].label() for b in self.path]

    def set_swarm(self, flags: bytes) -> None:
        """The run's swarm flags, from the first 1 + len(actions) bytes of its first burst.

        NOTE(swarm-flags): Hypothesis switches rules off per run (swarm testing: FeatureFlags,
        each rule off with a probability drawn for the run, at least one on), and a run in
        which every enabled action is off was thrown away as invalid (at 8 requests of
        sglang_pd, 339 of the 641 runs Hypothesis started, cut short there after about 13
        steps: their steps counted, the runs not). Here each action is off
        when its byte is below a threshold drawn for the run (the first byte mod 255: off
        with probability up to 254/256, none off when the bytes are 0, Hypothesis's simplest
        draw), and off actions are only put last: `choose` picks among them when no on action
        is enabled, so every run goes on as long as the model can, and is counted."""
        threshold = flags[0] % 255
        on = [a for a in range(len(self.weights)) if flags[1 + a] >= threshold]
        off = [a for a in range(len(self.weights)) if flags[1 + a] < threshold]
        self.order = [(group, [self.weights[a] for a in group]) for group in (on, off) if group]

    def run_burst(self, choices: bytes) -> None:
        """Fire up to burst_steps steps, one WORD of `choices` each after the swarm flags
        (NOTE(bursts)); the flags are read at the run's first burst only (NOTE(swarm-flags))."""
        flags = 1 + len(self.weights)
        if not self.swarmed:
            self.swarmed = True
            self.set_swarm(choices[:flags])
        try:
            for k in range(flags, len(choices), WORD):
                if len(self.path) >= self.max_steps:
                    return
                picked = self.choose(int.from_bytes(choices[k:k + WORD], "little"))
                if picked is None:
                    return  # a dead end: nothing can fire
                before = len(self.path)
                a, b = picked
                self.fire(a, _unrank(self.explorer.slices[a], b))
                if len(self.path) == before:
                    return  # the subclass declined the step
        except SpecError as e:
            e.steps = e.steps or self._steps()
            raise

    def choose(self, x: int) -> tuple[int, int] | None:
        """The step the word x picks in the current state: (action, binding), or None at a
        dead end.

        x is read as digits of mixed radix: a digit below the total weight of the actions
        left picks one (an action of weight k has k of its values); a digit below its number
        of bindings picks where its scan for an enabled binding starts. An action without one
        is dropped and the next digits pick again among the others, so an enabled action is
        picked with probability its weight over the enabled ones' total, as drawing among
        the enabled actions alone gives (NOTE(bursts)); the swarm's off actions are tried
        only when no on action is enabled. 64 bits are digits enough for the dozens of tries
        of a large spec; once used up, the digits are 0 (the first action left)."""
        explorer = self.explorer
        slices = explorer.slices
        node = self.node
        first = node.first
        search = self.search
        for actions, weights in self.order:
            actions, weights = list(actions), list(weights)
            total = sum(weights)
            while actions:
                r = x % total
                x //= total
                k = 0
                while r >= weights[k]:
                    r -= weights[k]
                    k += 1
                a = actions[k]
                sl = slices[a]
                n = sl.hi - sl.lo
                start = sl.lo + x % n
                x //= n
                if a in first and first[a] is None:
                    b = None  # known disabled here
                else:
                    b = explorer.scan(self.path, node, a, start)
                    search.tried.add(sl.name)
                    if b is None:
                        first[a] = None
                    else:
                        search.enabled.add(sl.name)
                        if start == sl.lo:
                            first[a] = b
                if b is not None:
                    return a, b
                total -= weights[k]
                del actions[k], weights[k]
        return None

    def fire(self, a: int, picks: list[int]) -> None:
        """Fire action a from the binding `picks` on. A SpecError of the spec's code ends the
        check (Hypothesis replays it and lets it through), carrying the run's steps so far."""
        try:
            self._fire(a, picks)
        except SpecError as e:
            e.steps = e.steps or self._steps()
            raise

    def _fire(self, a: int, picks: list[int]) -> None:
        search = self.search
        if search.out_of_time():
            raise TimeUp
        sl = self.explorer.slices[a]
        b = self.explorer.scan(self.path, self.node, a, _rank(sl, picks))
        if b is None:
            return  # a deadlock: nothing can fire
        child = self.explorer.child(self.path, self.node, b)
        assert child is not None
        self.path = self.path + (b,)
        self.node = child
        if self.counted:
            search.steps += 1
            search.fired.add(sl.name)
            search.longest = max(search.longest, len(self.path))
            search.seen.add(hash(child.packed))
        self.judge_step(b, child)
        if self.liveness is not None:
            got = self.liveness.arrive(self.path, child)
            if got is not None:
                self.fail(RunFailed(got.name, self.path, got))
        if search.pending:
            hits = self.explorer.interp.sometimes_hits(child.packed, search.pending)
            if hits:
                search.reached.update(hits)
                search.pending = [n for n in search.pending if n not in hits]
        self._note_enabled()
        search.tick()

    def judge_step(self, b: int, child: Node) -> None:
        """Fail the run if arriving at `child` violates a property."""
        flags = self.explorer.flags_at(child)
        if flags:
            self.fail(RunFailed(primary(flags), self.path, flags))

    def fail(self, failure: RunFailed) -> None:
        self.search.found = True
        raise failure

    def _note_enabled(self) -> None:
        """Look at the actions not yet seen enabled, so that the coverage can say which never were."""
        search = self.search
        if len(search.enabled) < len(self.explorer.slices):
            for a in range(len(self.explorer.slices)):
                if self.explorer.slices[a].name not in search.enabled:
                    self._enabled(a)

    def teardown(self) -> None:
        """Count the run, unless Hypothesis discarded it as invalid (a rejected draw)."""
        ending = sys.exc_info()[1]  # the exception ending the run, if any
        if self.counted and (ending is None or isinstance(ending, RunFailed)):
            self.search.runs += 1
            if self.liveness is not None:
                self.liveness.obligations.ended(self.liveness, normally=ending is None)


def bursts(steps: int) -> tuple[int, int]:
    """(bursts per run, steps per burst) for runs of at most `steps` steps (NOTE(bursts)):
    as few bursts of at most BURST as cover them, of equal length."""
    count = -(-steps // BURST)
    return count, -(-steps // count)


def machine_class(model: Model, search: Search, base: type[MachineBase] = MachineBase, *,
                  weights: dict[str, int] | None = None, steps: int = DEFAULT_STEPS) -> type[MachineBase]:
    """A RuleBasedStateMachine for runs of `model` of at most `steps` steps, derived from
    `base`: one rule, each firing a burst of steps picked by one draw, the run's swarm flags
    drawn with its first burst (NOTE(bursts), NOTE(swarm-flags)). `weights`: an action of weight k is picked as if offered k times."""
    slices = search.explorer.slices
    _, length = bursts(steps)
    namespace: dict[str, Any] = {
        "search": search, "__module__": __name__, "max_steps": steps, "burst_steps": length,
        "weights": tuple((weights or {}).get(sl.name, 1) for sl in slices),
    }

    def burst(self: MachineBase, choices: bytes) -> None:
        self.run_burst(choices)

    burst.__qualname__ = f"{model.spec_cls.__name__}Machine.burst"
    burst.__doc__ = f"up to {length} steps of the model (NOTE(bursts))"
    size = 1 + len(slices) + WORD * length  # the swarm flags, then a word per step
    namespace["burst"] = rule(choices=st.binary(min_size=size, max_size=size))(burst)
    return type(f"{model.spec_cls.__name__}Machine", (base,), namespace)


def model_key(model: Model, salt: str = "") -> bytes:
    """A stable key naming this model (spec class and file, parameters, fixes) for Hypothesis:
    its example database key and, when derandomised, the source of its fixed seed."""
    text = repr((salt, model.spec_cls.__qualname__, Path(model.spec_cls.source_file()).name,
                 sorted(model.env.items()), list(model.spec.fixes)))
    return hashlib.sha256(text.encode()).digest()


def build_settings(*, runs: int, steps: int, database: Any, profile: str | settings | None) -> settings:
    """Hypothesis settings for a check: the profile, then runs, steps and the database."""
    if isinstance(profile, settings):
        base = profile
    else:
        name = profile or "default"
        if name in PROFILES:
            base = settings(settings.get_profile("default"), **PROFILES[name])
        else:
            try:
                base = settings.get_profile(name)
            except InvalidArgument:
                known = ", ".join(PROFILES)
                raise UsageError(
                    f"unknown fuzz profile {name!r}: use one of {known}, or the name of a profile"
                    " registered with hypothesis.settings.register_profile"
                ) from None
    db: ExampleDatabase | None
    if base.derandomize:
        db = None
    elif database == USE_DEFAULT_DATABASE:
        db = DirectoryBasedExampleDatabase(str(DEFAULT_DATABASE))
    elif database is None or isinstance(database, ExampleDatabase):
        db = database
    elif isinstance(database, str | Path):
        db = DirectoryBasedExampleDatabase(str(database))
    else:
        raise UsageError(f"database={database!r}: give a directory, an ExampleDatabase, or None")
    return settings(
        base,
        max_examples=runs,
        stateful_step_count=steps,
        database=db,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
        # Shrinking is done on paths (NOTE(shrink-paths)); the explain phase only annotates
        # Hypothesis's own report, which is never shown.
        phases=[p for p in base.phases if p not in (Phase.shrink, Phase.explain)],
    )


def run_search(model: Model, search: Search, hsettings: settings, seed: int | None,
               base: type[MachineBase] = MachineBase, salt: str = "", *, exact: bool = False,
               weights: dict[str, int] | None = None) -> RunFailed | None:
    """Run the Hypothesis search; the first failing run, or None. Ctrl-C propagates.

    `exact`: the caller gave the seed, to repeat a search run for run, so the example database
    stays out (hypothesis.seed switches it off). A seed chosen here only to be reported keeps
    the database: a failure found once replays first on the next run (NOTE(seed-database))."""
    steps = hsettings.stateful_step_count
    machine = machine_class(model, search, base, weights=weights, steps=steps)
    # (a rule is a burst of steps: NOTE(bursts))
    test = get_state_machine_test(machine, settings=settings(hsettings, stateful_step_count=bursts(steps)[0]))
    key = model_key(model, salt)
    test._hypothesis_internal_database_key = key  # type: ignore[attr-defined]
    test.hypothesis.inner_test._hypothesis_internal_add_digest = key  # type: ignore[attr-defined]
    if seed is not None and exact:
        test = hypothesis_seed(seed)(test)
    elif seed is not None:
        # NOTE(seed-database): hypothesis.seed(n) also sets database=None, so the example
        # database never saw a failure of ours (every run has a seed, to be reported); the
        # seed alone is what it sets besides that (hypothesis/core.py, seed.accept).
        test._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
    try:
        with with_reporter(lambda _text: None):
            test()
    except RunFailed as e:
        return e
    except TimeUp:
        pass
    return None


def choose_seed(seed: int | None, hsettings: settings) -> int | None:
    """The seed to run with: the one given, else pytest's --hypothesis-seed, none when
    derandomised, else a fresh one to report."""
    if seed is None:
        import hypothesis.core

        forced = getattr(hypothesis.core, "global_force_seed", None)  # pytest --hypothesis-seed
        if forced is not None:
            return int(forced) if isinstance(forced, int) or str(forced).isdigit() else \
                int.from_bytes(hashlib.sha256(str(forced).encode()).digest()[:4], "big")
    if seed is None and not hsettings.derandomize:
        return random.SystemRandom().randrange(2**32)
    return seed


# --------------------------------------------------------------------------- the engine


def check(
    model: Model,
    *,
    runs: int = DEFAULT_RUNS,
    steps: int = DEFAULT_STEPS,
    seed: int | None = None,
    database: Any = USE_DEFAULT_DATABASE,
    profile: str | settings | None = None,
    max_seconds: float | None = None,
    max_shrink_seconds: float | None = DEFAULT_SHRINK_SECONDS,
    reporter: Reporter | None = None,
    report_every: float = 0.5,
    liveness: bool = False,
    weights: dict[str, int] | None = None,
    generic_kernel: bool = False,
) -> CheckResult:
    """Fuzz `model` with Hypothesis: `runs` runs of at most `steps` steps each.

    `seed` makes the runs reproducible (without one, a seed is chosen and reported in the
    coverage, unless the profile is derandomised). `database`: a directory or Hypothesis
    ExampleDatabase that replays known failures first ("default": .ownership/examples;
    None: off). `profile`: "default", "ci" (derandomised, no database), a registered
    Hypothesis profile name, or a settings object. `max_seconds` stops the search for a
    violation (verdict inconclusive); `max_shrink_seconds` bounds shrinking one.

    `liveness`: also follow the model's liveness properties on every run (NOTE(bounded-
    liveness)): a run that shows one failing (a dead end or a fair cycle with the obligation
    pending, a bounded response too late) is a violation like any other; otherwise
    `result.liveness` says, per property, how far the runs went without one (bounded).

    `weights`: how many times each named action is offered to Hypothesis's choice of the next
    rule (1 when not named; at least 1, so that no enabled action is ruled out): a bias, as
    the searches of a swarm (ownership.engines.swarm) take to differ from one another.

    `generic_kernel`: step with the kernel's generic definition instead of the concrete
    interpreter's fast path (the same runs and result, slower: benchmarks/fuzz_scale.py).

    The result carries `result.seen` (a Seen): the sets behind its coverage, for merging."""
    if runs < 1 or steps < 1:
        raise UsageError(f"runs={runs}, steps={steps}: both must be at least 1")
    known = {decl.name for decl in model.spec_cls._actions.values()}
    for name, w in (weights or {}).items():
        if name not in known or not isinstance(w, int) or w < 1:
            raise UsageError(f"weights: {name}={w!r}: give actions of {model.spec_cls.__name__} a whole number"
                             " of at least 1")
    hsettings = build_settings(runs=runs, steps=steps, database=database, profile=profile)
    exact = seed is not None
    seed = choose_seed(seed, hsettings)
    start = time.monotonic()
    names = [decl.name for decl in model.spec_cls._actions.values()]
    search: Search | None = None
    failure: RunFailed | None = None
    stopped_by = "max-runs"
    try:
        # (at a million pages the initial state's checks alone take seconds: Ctrl-C and the
        # command's limits, ownership.limits, can stop them too)
        explorer = Explorer(model, generic_kernel=generic_kernel)
        search = Search(explorer, start, max_seconds, reporter, report_every, last_report=start)
        search.pending = [p.name for p in model.sometimes]
        if liveness and model.liveness_checked():
            search.obligations = Obligations(model, explorer)
        initial = explorer.root.state_flags or []
        if not initial:
            got = explorer.interp.sometimes_hits(model.initial, search.pending)
            search.reached.update(got)
            search.pending = [n for n in search.pending if n not in got]
        if initial:
            failure = RunFailed(primary(initial), (), initial)
        elif search.obligations is not None and (at_start := search.obligations.judge(())) is not None:
            failure = at_start  # a dead end at the start, or a response due at once
        elif model.bindings:
            failure = run_search(model, search, hsettings, seed, exact=exact, weights=weights)
    except LimitReached as e:
        stopped_by = e.reason
    except KeyboardInterrupt:
        stopped_by = "interrupt"
    if search is not None and search.expired and failure is None:
        stopped_by = "max-seconds"

    def coverage(stop: str | None) -> Coverage:
        """What was tried, and only that: an action is listed as never fired, or never
        enabled, only once its enabledness was looked at in some state."""
        if search is None:
            return Coverage(0, 0, 0, complete=False, stopped_by=stop, seconds=time.monotonic() - start,
                            runs=0, seed=seed)
        never_fired = tuple(n for n in names if n in search.tried and n not in search.fired)
        return Coverage(len(search.seen), search.steps, search.longest, complete=False, stopped_by=stop,
                        seconds=time.monotonic() - start, runs=search.runs, never_fired=never_fired,
                        never_enabled=tuple(n for n in never_fired if n not in search.enabled), seed=seed)

    def seen(result: CheckResult) -> CheckResult:
        """The result with the sets behind its coverage (Seen)."""
        if search is not None:
            result.seen = Seen(frozenset(search.seen), frozenset(search.fired),  # type: ignore[attr-defined]
                               frozenset(search.enabled), frozenset(search.tried),
                               {} if search.obligations is None else search.obligations.counts())
        else:
            result.seen = Seen()  # type: ignore[attr-defined]
        return result

    if search is None:
        return seen(CheckResult(Verdict.INCONCLUSIVE, coverage(stopped_by), "fuzz",
                                sometimes={p.name: None for p in model.sometimes}))
    sometimes: dict[str, bool | None] = {p.name: (True if p.name in search.reached else None) for p in model.sometimes}
    obligations = search.obligations
    live: dict[str, Any] = {}  # CheckResult's liveness and fairness, when liveness was followed
    if obligations is not None:
        from .liveness import fairness_text

        live = {"liveness": obligations.texts(search.runs, steps, None if failure is None else failure.kind),
                "fairness": fairness_text(model)}
    if failure is None:
        verdict = Verdict.BOUNDED if stopped_by == "max-runs" else Verdict.INCONCLUSIVE
        return seen(CheckResult(verdict, coverage(stopped_by), "fuzz", sometimes=sometimes, **live))

    cov = coverage("violation")
    search.phase = "shrink"
    search.tick(force=True)

    def judge_safety(path: tuple[int, ...]) -> RunFailed | None:
        walked = explorer.walk(path)
        if walked is None or not walked[1]:
            return None
        nodes, flags = walked
        return RunFailed(primary(flags), path[:len(nodes) - 1], flags)

    # with liveness followed, a run fails at its first event, of safety or of liveness
    judge = judge_safety if obligations is None else obligations.judge

    # shrinking stops at max_shrink_seconds, and at max_seconds too (the whole check's limit)
    ends = [t for t in (None if max_shrink_seconds is None else time.monotonic() + max_shrink_seconds,
                        None if max_seconds is None else start + max_seconds) if t is not None]
    shrinker = PathShrinker(explorer.slices, judge, deadline=min(ends) if ends else None, on_try=search.tick)
    best = judge(failure.path) or failure
    try:
        best = shrinker.shrink(best)
    except KeyboardInterrupt:  # Ctrl-C or a limit while shrinking: report the shortest run so far
        best = shrinker.best or best
        shrinker.timed_out = True
    walked = explorer.walk(best.path)
    bindings: list[Binding] = [model.bindings[b] for b in best.path]
    if isinstance(best.detail, LiveFailure):
        assert walked is not None and not walked[1] and obligations is not None, "a liveness failure's run is safe"
        trace = obligations.trace([n.state for n in walked[0]], bindings, best.detail)
    else:
        assert walked is not None and walked[1], "a shrunk path still fails"
        nodes, flags = walked
        trace = build_trace(model, [n.state for n in nodes], bindings, flags, engine="fuzz")
    result = CheckResult(Verdict.VIOLATED, cov, "fuzz", trace=trace, sometimes=sometimes, **live)
    result.shrink = {"tries": shrinker.tries, "steps_before": len(failure.path),  # type: ignore[attr-defined]
                     "timed_out": shrinker.timed_out, "seconds": time.monotonic() - start - cov.seconds}
    return seen(result)
