"""Symmetry reduction over interchangeable requests, for the batch engine.

Requests of a spec are interchangeable when every action, property and the initial state treat
them alike: renaming the requests (a permutation π of 1..requests) maps a reachable state to a
reachable state, enabled actions to enabled actions and violations to violations. The search
may then store one state per class (orbit). This module

- decides whether a model has that symmetry (`equivariance_problem`), statically, from the
  traced graphs: for generators π of the permutation group, the graphs of binding π(b) must be
  the graphs of b with per-request slots permuted and request ids relabelled, term by term
  (request ids may only be compared for equality, chosen by `If`, selected or stored; a spec
  that orders them, computes with them, or names one request in particular is not symmetric);
- canonicalises packed rows in bulk (`Canonicaliser`): π·s moves request i's elements of every
  per-request slot to request π(i), and relabels every value of a slot whose domain is a
  RequestDomain (1..requests; 0 = none/free and requests+1 = r0 stay). The representative is
  the least row over all permutations, in the order "per-request signatures sorted, then the
  packed words": only the permutations that sort the signatures are tried, which is one
  permutation for most states;
- counts how many states each representative stands for (requests! / |stabiliser|), so a run
  reports "N states (M before symmetry)", and M equals the state count without reduction.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np

from ..errors import UsageError
from ..interpret.batch import BatchModel, Layout
from ..ir.graph import Graph, limb_plan
from ..lang.declare import RequestDomain
from ..lang.model import Model


def _request_valued(model: Model) -> list[bool]:
    """Per state position: does it hold a request id?"""
    out = [False] * model.width
    for s in model.slots:
        if isinstance(s.domain, RequestDomain):
            for k in range(s.length):
                out[s.offset + k] = True
    return out


def position_map(model: Model, perm: tuple[int, ...]) -> list[int]:
    """Where each state position goes under π (perm[i-1] = π(i)): request i's element of a
    per-request slot moves to request π(i); every other position stays."""
    out = list(range(model.width))
    for s in model.slots:
        if s.shape == "request":
            for i in range(1, s.length + 1):
                out[s.offset + i - 1] = s.offset + perm[i - 1] - 1
    return out


# NOTE(wide-symmetry): a page set of a pool of more than 62 pages is several columns of the
# unpacked matrix (limb 0 at its position's row, the others after model.width: NOTE(wide-pages)
# in ownership.interpret.batch). Renaming requests moves a position with all of its columns:
# limb k of request i's element of a per-request slot goes to limb k of request π(i)'s, so the
# check, the canonical form and the reference read columns (`column_map`), never positions
# alone; a request id is never wide. With one column a position, columns are positions.


def column_map(model: Model, perm: tuple[int, ...], cols: list[tuple[int, ...]] | None = None) -> list[int]:
    """`position_map` over the columns of the unpacked matrix (NOTE(wide-symmetry)): where each
    column goes under π, a wide position's limbs with it."""
    cols = limb_plan(model)[1] if cols is None else cols
    pos = position_map(model, perm)
    out = list(range(max([model.width] + [c[-1] + 1 for c in cols])))
    for i, c in enumerate(cols):
        to = cols[pos[i]]
        if len(to) != len(c):
            raise AssertionError("a position and its renaming have different limbs")
        for k, col in enumerate(c):
            out[col] = to[k]
    return out


def _request_valued_columns(model: Model, cols: list[tuple[int, ...]]) -> list[bool]:
    """Per column of the unpacked matrix: does it hold a request id (a wide page set's limbs
    never do)?"""
    req = _request_valued(model)
    out = [False] * max([model.width] + [c[-1] + 1 for c in cols])
    for i, c in enumerate(cols):
        out[c[0]] = req[i]
    return out


def relabel_value(model: Model, perm: tuple[int, ...], v: int) -> int:
    """π applied to a request id (0 and requests+1 stay)."""
    return perm[v - 1] if 1 <= v <= model.requests else v


def apply_concrete(model: Model, perm: tuple[int, ...], state: tuple[int, ...]) -> tuple[int, ...]:
    """π·state for one concrete state."""
    pos = position_map(model, perm)
    req = _request_valued(model)
    out = [0] * model.width
    for i, v in enumerate(state):
        out[pos[i]] = relabel_value(model, perm, v) if req[i] else v
    return tuple(out)


def binding_map(model: Model, perm: tuple[int, ...]) -> list[int] | None:
    """For each binding, the index of the binding with its request arguments relabelled by π;
    None if some relabelled binding does not exist."""
    index = {(b.action.name, b.args): k for k, b in enumerate(model.bindings)}
    out = []
    for b in model.bindings:
        args = []
        for (_, decl), v in zip(b.action.args, b.args):
            args.append(relabel_value(model, perm, v) if isinstance(decl, RequestDomain) else v)
        k = index.get((b.action.name, tuple(args)))
        if k is None:
            return None
        out.append(k)
    return out


def generators(requests: int) -> list[tuple[int, ...]]:
    """A transposition and a full cycle: together they generate every permutation."""
    if requests < 2:
        return []
    swap = (2, 1) + tuple(range(3, requests + 1))
    if requests == 2:
        return [swap]
    cycle = tuple(range(2, requests + 1)) + (1,)
    return [swap, cycle]


#: Integer operations whose operands may be regrouped and reordered (and, or: below).
_AC = ("add", "mul", "bitand", "bitor", "bitxor")


class _NotSymmetric(Exception):
    pass


class _Canon:
    """Canonical ids of graph nodes under a permutation (see `equivariance_problem`)."""

    def __init__(self, graph: Graph, model: Model, perm: tuple[int, ...], table: dict[Any, int]) -> None:
        self.g = graph
        self.model = model
        self.perm = perm
        # (by column: a wide page set's limbs move with it, NOTE(wide-symmetry))
        self.pos = column_map(model, perm, graph.cols)
        self.req = _request_valued_columns(model, graph.cols)
        self.owner = {col: i for i, c in enumerate(graph.cols) for col in c}
        self.table = table
        self.memo: dict[tuple[int, bool], int] = {}
        self.is_req_memo: dict[int, bool] = {}

    def _id(self, key: Any) -> int:
        got = self.table.get(key)
        if got is None:
            got = self.table[key] = len(self.table)
        return got

    def _slot(self, col: int) -> str:
        i = self.owner.get(col, col)
        for s in self.model.slots:
            if s.offset <= i < s.offset + s.length:
                return s.name
        return "?"

    def is_req(self, n: int) -> bool:
        got = self.is_req_memo.get(n)
        if got is not None:
            return got
        node = self.g.nodes[n]
        if node.op == "var":
            out = self.req[node.value]
        elif node.op == "ite":
            out = self.is_req(node.args[1]) or self.is_req(node.args[2])
        elif node.op == "select":
            out = any(self.is_req(v) for v in self.g.nodes[node.args[0]].args)
        else:
            out = False
        self.is_req_memo[n] = out
        return out

    def of(self, n: int, ctx: bool = False) -> int:
        key = (n, ctx)
        got = self.memo.get(key)
        if got is None:
            got = self.memo[key] = self._of(n, ctx)
        return got

    def _of(self, n: int, ctx: bool) -> int:
        node = self.g.nodes[n]
        op, a = node.op, node.args
        if op == "const":
            v = node.value
            if ctx and not isinstance(v, bool):
                v = relabel_value(self.model, self.perm, int(v))
            return self._id(("c", type(v).__name__, v))
        if op == "var":
            if self.req[node.value] != ctx:
                what = "used as a number" if not ctx else "compared with a request id"
                raise _NotSymmetric(f"state position {node.value} ({self._slot(node.value)}) is {what}")
            return self._id(("v", self.pos[node.value]))
        if ctx and op not in ("ite", "select"):
            raise _NotSymmetric(f"a request id is computed by {op!r}, not chosen or stored")
        if op in ("eq", "ne"):
            c = self.is_req(a[0]) or self.is_req(a[1])
            return self._id((op, tuple(sorted((self.of(a[0], c), self.of(a[1], c))))))
        if op in ("and", "or"):
            return self._id((op, tuple(sorted({self.of(x) for x in self._operands(op, n)}))))
        if op == "ite":
            c = ctx or self.is_req(a[1]) or self.is_req(a[2])
            return self._id(("ite", self.of(a[0]), self.of(a[1], c), self.of(a[2], c)))
        if op == "select":
            stack, idx, default = a
            values = self.g.nodes[stack].args
            c = ctx or any(self.is_req(v) for v in values)
            if self.is_req(idx):
                raise _NotSymmetric("a slot is indexed by a request id held in the state")
            d = relabel_value(self.model, self.perm, default) if c else default
            return self._id(("select", tuple(self.of(v, c) for v in values), self.of(idx), d))
        kid_ids = a[:2] if op == "nth" else a
        if any(self.is_req(x) for x in kid_ids):
            raise _NotSymmetric(f"a request id held in the state is used by {op!r}")
        extra = a[2:] if op == "nth" else ()
        if op in _AC:
            # associative and commutative: a sum over requests is the same sum renamed
            return self._id((op, tuple(sorted(self.of(x) for x in self._operands(op, n)))))
        return self._id((op, tuple(self.of(x) for x in kid_ids), extra))

    def _operands(self, op: str, n: int) -> list[int]:
        """The leaves of a tree of one associative operation (e.g. a + b + c as [a, b, c])."""
        out, stack = [], [n]
        while stack:
            m = stack.pop()
            node = self.g.nodes[m]
            if node.op == op and node.sort == self.g.nodes[n].sort:
                stack.extend(node.args)
            else:
                out.append(m)
        return out


def require_symmetric(model: Model, bm: BatchModel) -> None:
    """Refuse --symmetry (a UsageError with the reason) for a spec whose requests are not
    interchangeable; a single request has nothing to rename."""
    if model.requests < 2:
        return
    problem = equivariance_problem(model, bm)
    if problem is not None:
        raise UsageError(f"--symmetry: the requests of this spec are not interchangeable: {problem}."
                         " Check it without --symmetry.")


def equivariance_problem(model: Model, bm: BatchModel) -> str | None:
    """Why renaming requests is not a symmetry of this model, or None when it is."""
    from ..ir.tracer import trace_model

    shared = [name for name, info in model.pools.items() if info.shared]
    if shared:  # (a page's holders are bit fields per request, which π would have to permute)
        return (f"pool {shared[0]} is shared: a page's holders are fields per request of one integer, which the"
                " reduction does not permute")
    traced = trace_model(model)
    g = bm.graph
    table: dict[Any, int] = {}
    ident = tuple(range(1, model.requests + 1))
    base = _Canon(g, model, ident, table)
    req = base.req

    def summary(c: _Canon, b: int) -> Any:
        tr = traced.actions[b]
        guard = tuple(sorted({c.of(g.term(x)) for x in tr.guard}))
        writes = {}
        # (by column: a wide page set's write is one per limb, as the batch model compiles it;
        # NOTE(wide-symmetry))
        for i, w in tr.writes.items():
            for col, n in g.write_nodes(i, w):
                node = g.nodes[n]
                if node.op == "var" and node.value == col:
                    continue
                writes[c.pos[col]] = c.of(n, req[col])
        flags = tuple(sorted((p, c.of(g.term(x))) for p, x, _ in tr.flags))
        # the spec errors it can raise, each under the guards before it (issue 11: a spec where
        # only r1 can raise one is not symmetric)
        errors = tuple(sorted((tuple(sorted({c.of(g.term(x)) for x in before})), c.of(g.term(cond)), f.kind)
                              for before, cond, f in tr.errors()))
        return guard, tuple(sorted(writes.items())), flags, errors

    for perm in generators(model.requests):
        if apply_concrete(model, perm, model.initial) != model.initial:
            return "the initial state is not the same for every request"
        bmap = binding_map(model, perm)
        if bmap is None:
            return "renaming requests turns an action binding into one that does not exist"
        c = _Canon(g, model, perm, table)
        try:
            for b in range(len(model.bindings)):
                if summary(c, b) != summary(base, bmap[b]):
                    return (f"action {model.bindings[b].label()} does not behave like"
                            f" {model.bindings[bmap[b]].label()} with the requests renamed")
            props = traced.properties
            for name, cond in props.invariants + props.sometimes:
                if c.of(g.term(cond)) != base.of(g.term(cond)):
                    return f"property {name} is not the same for every request"
            state_errors = sorted(c.of(g.term(e.cond)) for e in props.errors)
            if state_errors != sorted(base.of(g.term(e.cond)) for e in props.errors):
                return "the spec errors that the properties can raise are not the same for every request"
            leaks = sorted(c.of(g.term(cond)) for cond, _ in props.leak)
            if leaks != sorted(base.of(g.term(cond)) for cond, _ in props.leak):
                return "the leak property is not the same for every request"
        except _NotSymmetric as e:
            return str(e)
    return None


def _tied_orderings(pattern: int, requests: int) -> int:
    """How many orderings sort signatures whose ties are `pattern` (bit j: ranks j and j + 1
    tie): the product of the factorials of the tied runs' lengths."""
    total, run = 1, 1
    for j in range(requests - 1):
        run = run + 1 if pattern >> j & 1 else 1
        total *= run
    return total


class Canonicaliser:
    """Least representatives of packed rows under request renaming, in bulk."""

    def __init__(self, model: Model, layout: Layout) -> None:
        self.model = model
        self.layout = layout
        R = model.requests
        self.requests = R
        self.order = 1
        for k in range(2, R + 1):
            self.order *= k
        req = _request_valued(model)
        # The signature of request i: its elements of the per-request slots that do not hold
        # request ids, most significant first, then one bit per position of the other slots
        # that hold request ids (page owners...): whether it holds i. Any function of a
        # request's own data and of where it appears keeps the representative canonical
        # (renaming moves both with the request); truncated to 64 bits, it only breaks fewer
        # ties. NOTE(complete-signature): when nothing was truncated and no per-request slot
        # holds request ids, two requests with equal signatures are interchangeable in the
        # state itself (equal data, and neither appears anywhere), so every ordering that sorts
        # the signatures gives the same row.
        sig: list[tuple[int, int, int]] = []  # (slot offset, lo, bits)
        used = 0
        complete = True
        cols = layout.cols
        for s in model.slots:
            if s.shape != "request" or isinstance(s.domain, RequestDomain):
                complete &= not (s.shape == "request" and isinstance(s.domain, RequestDomain))
                continue
            if s.length and len(cols[s.offset]) > 1:
                # a wide page set (NOTE(wide-symmetry)): not in the signature, which reads one
                # column a position; leaving a request's own data out only breaks fewer ties
                complete = False
                continue
            bits = max(0, (s.hi - s.lo).bit_length())
            if bits == 0:
                continue
            if used + bits > 64:
                complete = False
                break
            sig.append((s.offset, s.lo, bits))
            used += bits
        appear = [i for s in model.slots if s.shape != "request" and isinstance(s.domain, RequestDomain)
                  for i in range(s.offset, s.offset + s.length)]
        if used + len(appear) > 64:
            complete = False
            appear = appear[:64 - used]
        self.sig = sig
        self.appear = appear
        self.complete = complete
        self.req_rows = np.array([i for i in range(model.width) if req[i]], dtype=np.int64)
        top = max([s.hi for s in model.slots if isinstance(s.domain, RequestDomain)] + [R + 1])
        #: the columns that renaming permutes, R at a time (groups[g, r]: request r + 1's
        #: column of group g): per per-request slot, its elements' own columns, then for a wide
        #: page set (NOTE(wide-symmetry)) the columns of each further limb of its elements (for
        #: renaming every row by its own ordering at once: NOTE(sorted-orderings))
        groups = []
        for s in model.slots:
            if s.shape != "request":
                continue
            if s.length != R:
                raise AssertionError(f"per-request slot {s.name} has {s.length} elements for {R} requests")
            for k in range(len(cols[s.offset]) if s.length else 0):
                groups.append([cols[s.offset + r][k] for r in range(R)])
        self.groups = np.array(groups, dtype=np.int64).reshape(len(groups), R)
        #: the columns of the groups, a group's R together
        self.moved = self.groups.ravel()
        #: whether each group is R consecutive columns (every group, without wide page sets)
        self.consecutive = bool((np.diff(self.groups, axis=1) == 1).all())
        self.top = top
        self._ties: dict[int, list[tuple[int, ...]]] = {}
        #: per tie pattern: how many orderings sort such signatures (the product of the
        #: factorials of the tied runs' lengths): the stabiliser's size, with a complete signature
        self.tie_sizes = np.array([_tied_orderings(p, R) for p in range(1 << (R - 1))] if self.complete else [],
                                  dtype=np.int64)

    def signatures(self, X: np.ndarray) -> np.ndarray:
        """(requests x n) uint64 signatures of each request in each row."""
        n = X.shape[1]
        out = np.zeros((self.requests, n), dtype=np.uint64)
        for r in range(self.requests):
            for off, lo, bits in self.sig:
                col = X[off + r] - lo if lo else X[off + r]
                out[r] = (out[r] << np.uint64(bits)) | col.astype(np.uint64)
        if self.appear:
            ids = np.arange(1, self.requests + 1, dtype=X.dtype)[:, None]
            one = np.uint64(1)
            for i in self.appear:
                out = (out << one) | (X[i][None, :] == ids)
        return out

    def canonicalise(self, words: np.ndarray, X: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(representatives as packed words, stabiliser size per row) for packed rows.

        NOTE(sorted-orderings): the orderings that sort a row's request signatures are its
        argsort composed with the permutations within each run of tied signatures: one for a
        row whose signatures are all distinct. Rows are grouped by where their ties are (at
        most 2**(requests-1) patterns), and each group tries only its own orderings, every
        row renamed by its own ordering in one gather. Before, every row of a block was tested
        against all requests! orderings: 83% of a 5-request search. `by_every_ordering` is
        the old search, the reference the tests compare this with."""
        k, n = words.shape
        if self.requests < 2 or n == 0:
            return words, np.ones(n, dtype=np.int64)
        if X is None:
            X = self.layout.unpack(words)
        sig = self.signatures(X)
        order = np.argsort(sig, axis=0, kind="stable")  # order[j, c]: the request (0-based) ranked j in row c
        ranked = np.take_along_axis(sig, order, axis=0)
        pattern = np.zeros(n, dtype=np.int64)
        for j in range(self.requests - 1):
            pattern |= (ranked[j + 1] == ranked[j]).astype(np.int64) << j
        if self.complete:  # NOTE(complete-signature): one renaming per row
            return self._renamed_each(X, order), self.tie_sizes[pattern]
        best = np.empty((k, n), dtype=np.uint64)
        count = np.ones(n, dtype=np.int64)
        for pat in np.unique(pattern):
            rows = np.flatnonzero(pattern == pat)
            sub = X if rows.size == n else X[:, rows]
            ords = order if rows.size == n else order[:, rows]
            top: np.ndarray | None = None
            times = np.zeros(rows.size, dtype=np.int64)
            for sigma in self._within_ties(int(pat)):
                W = self._renamed_each(sub, ords[list(sigma)])
                if top is None:
                    top, times[:] = W, 1
                    continue
                less = np.zeros(rows.size, dtype=bool)
                equal = np.ones(rows.size, dtype=bool)
                for w in range(k):
                    less |= equal & (W[w] < top[w])
                    equal &= W[w] == top[w]
                top[:, less] = W[:, less]
                times[less] = 1
                times[equal] += 1
            assert top is not None
            best[:, rows] = top
            count[rows] = times
        return best, count

    def _within_ties(self, pattern: int) -> list[tuple[int, ...]]:
        """The permutations of ranks that permute only within runs of tied signatures (bit j
        of `pattern`: ranks j and j + 1 tie), identity first."""
        got = self._ties.get(pattern)
        if got is None:
            runs, run = [], [0]
            for j in range(1, self.requests):
                if pattern >> (j - 1) & 1:
                    run.append(j)
                else:
                    runs.append(run)
                    run = [j]
            runs.append(run)
            got = [tuple(itertools.chain.from_iterable(p)) for p in itertools.product(*(itertools.permutations(r) for r in runs))]
            self._ties[pattern] = got
        return got

    def _renamed_each(self, X: np.ndarray, ords: np.ndarray) -> np.ndarray:
        """Each row of X (a column) renamed by its own ordering (ords[j, c]: the request,
        0-based, that becomes request j + 1), packed: each per-request slot's elements are
        permuted, then every request id is relabelled (flat `take`s: numpy's
        take_along_axis builds index grids, several times slower)."""
        R, n = self.requests, X.shape[1]
        X = np.ascontiguousarray(X)
        Y = X.copy()
        col = np.arange(n, dtype=np.int64)
        if self.moved.size:
            if self.consecutive:  # (the columns of group g are groups[g, 0] + r)
                at = ords * n + col  # (R x n): where request j + 1's element comes from, in a slot's rows
                src = self.groups[:, :1, None] * n + at[None]
            else:  # (a wide page set's limbs: NOTE(wide-symmetry))
                src = self.groups[:, ords] * n + col
            Y[self.moved] = X.ravel().take(src).reshape(-1, n)
        if self.req_rows.size:
            table = np.repeat(np.arange(self.top + 1, dtype=X.dtype)[:, None], n, axis=1)
            table[1 + ords, col] = np.arange(1, R + 1, dtype=X.dtype)[:, None]
            ids = Y[self.req_rows]
            Y[self.req_rows] = table.ravel().take(ids * n + col)
        return self.layout.pack(Y)

    @functools.cached_property
    def orderings(self) -> list[tuple[tuple[int, ...], np.ndarray, np.ndarray]]:
        """Every ordering ρ (t's request j is s's request ρ[j-1]; then π(ρ[j-1]) = j), with
        the gather of state positions and the relabelling of request ids it makes: for the
        reference alone (requests! of them; the search never builds them)."""
        R, model = self.requests, self.model
        out = []
        for rho in itertools.permutations(range(1, R + 1)):
            perm = [0] * R
            for j, r in enumerate(rho, start=1):
                perm[r - 1] = j
            pos = column_map(model, tuple(perm), self.layout.cols)  # (NOTE(wide-symmetry))
            src = [0] * len(pos)
            for i in range(len(pos)):
                src[pos[i]] = i
            lut = np.arange(self.top + 1, dtype=np.int64)
            for r in range(1, R + 1):
                lut[r] = perm[r - 1]
            out.append((rho, np.array(src, dtype=np.int64), lut))
        return out

    def _renamed(self, X: np.ndarray, rows: np.ndarray, gather: np.ndarray, lut: np.ndarray, n: int) -> np.ndarray:
        """The rows `rows` of X renamed by one ordering (its gather and relabelling), packed."""
        Y = X[np.ix_(gather, rows)] if rows.size < n else X[gather]
        if self.req_rows.size:
            Y[self.req_rows] = lut[Y[self.req_rows]]
        return self.layout.pack(Y)

    def by_every_ordering(self, X: np.ndarray, sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The least renaming of each row (unpacked, with its signatures) over every ordering
        that sorts its signatures, and how many orderings give it (the reference)."""
        n = X.shape[1]
        k = self.layout.words
        best = np.full((k, n), np.iinfo(np.uint64).max, dtype=np.uint64)
        count = np.zeros(n, dtype=np.int64)
        for rho, gather, lut in self.orderings:
            ok: Any = True
            for a, b in zip(rho, rho[1:]):
                ok = ok & (sig[a - 1] <= sig[b - 1])
            rows = np.flatnonzero(ok)
            if rows.size == 0:
                continue
            W = self._renamed(X, rows, gather, lut, n)
            B = best[:, rows]
            less = np.zeros(rows.size, dtype=bool)
            equal = np.ones(rows.size, dtype=bool)
            for w in range(k):
                less |= equal & (W[w] < B[w])
                equal &= W[w] == B[w]
            upd = rows[less]
            best[:, upd] = W[:, less]
            count[upd] = 1
            count[rows[equal]] += 1
        return best, count

    def orbit_sizes(self, stabiliser: np.ndarray) -> np.ndarray:
        """How many states each representative stands for."""
        return self.order // stabiliser
