"""The fuzz engine's explorer: a model run along paths of bindings, its states remembered by path.

A path is the bindings fired from the initial state (indices into model.bindings, laid out per
action: `ActionSlice`); a `Node` is the state a path reaches, with what is known there (the
step's flags, the state properties once judged, the bindings found disabled). The `Explorer`
steps with the concrete interpreter on packed states (ownership.interpret.store) and makes a
replayed step a dict look-up (NOTE(memo-by-path)); a binding found disabled is known disabled
where what it read is unchanged (NOTE(disabled-inherited)) or has values it was disabled with
before (NOTE(guard-memo)). `RunFailed` is a path that fails, as the Hypothesis runs
(ownership.engines.fuzz_search), the shrinker (fuzz_shrink) and the liveness judge
(fuzz_liveness) report it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..interpret.concrete import Concrete, Flag, Judged, flags_of
from ..interpret.store import CHUNK, CHUNK_BITS, LOW, Key, Packed
from ..kernel import PROPERTIES
from ..lang.declare import RequestDomain, as_domain
from ..lang.model import Model


class RunFailed(Exception):
    """A failing path: raised inside a Hypothesis run when a step fails, and what a judge of a
    path returns; carries the path (binding indices), the property (`kind`) and its detail."""

    def __init__(self, kind: str, path: tuple[int, ...], detail: Any = None) -> None:
        super().__init__(f"{kind} at step {len(path)}")
        self.kind = kind
        self.path = path
        self.detail = detail


def primary(flags: list[Flag]) -> str:
    """The property a set of flags is reported as: the first in the order of PROPERTIES."""
    order = list(PROPERTIES)
    return min((f.prop for f in flags), key=lambda p: (order.index(p) if p in order else len(order), p))


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


def unrank(sl: ActionSlice, b: int) -> list[int]:
    """The argument indices of binding b of an action."""
    k = b - sl.lo
    out = []
    for size in reversed(sl.sizes):
        out.append(k % size)
        k //= size
    return out[::-1]


def rank(sl: ActionSlice, picks: list[int]) -> int:
    """The binding of an action with the argument indices `picks` (unrank's inverse)."""
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
