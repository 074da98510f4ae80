"""Which orders of steps bmc's unrolling explores (NOTE(canonical-order)): one execution for
every set of executions that no query can tell apart, by commuting steps (the encoding's
footprints, NOTE(footprints) in ownership.interpret.smt) and by renaming interchangeable
requests (ownership.engines.symmetry).

A layer of ownership.engines.bmc above the encoding: `CanonicalOrder` gives the z3 constraints
that keep each prefix of the unrolling canonical, `interchangeable` whether renamings may be
used at all. z3 is imported only when constraints are made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..interpret.smt_params import SymbolicParam

if TYPE_CHECKING:
    from ..interpret.smt import Encoding


class CanonicalOrder:
    """Which orders of steps the unrolling explores: one execution for every set of executions
    that no query can tell apart (NOTE(canonical-order)).

    NOTE(canonical-order): at depth k a query asks about the last step (its flags) and the
    last two states (spec errors from s_{k-1}, the properties of s_k), never about the steps
    and states in between, and every execution of fewer than k steps is known to be clean
    already (no flag, no failing property, no spec error: the depths settled). So of the
    executions whose first k - 1 steps reach the same state and whose last step is the same
    binding, one is enough; for the queries about s_k alone, one of those whose k steps reach
    the same state. Two reductions keep one:

    - Commuting steps (Encoding.commuting, NOTE(footprints): neither writes a slot that the
      other reads or writes): two adjacent ones swapped are an execution again, to the same
      state. Each word of steps can be rearranged so into its lexicographic normal form, by
      binding index (Anisimov and Knuth): no step a comes after a run of steps that all commute
      with it and whose first is a larger binding than a (else a could move in front of them
      and the word would be smaller). The unrolling keeps only prefixes in that form:
      `later[p][a]` says that binding a at step p + 1 would break it. A rearranged prefix is an
      execution of the same length whose states before the last are each reached in fewer
      than k steps, so they and its steps are clean: it satisfies everything the solver holds
      about the earlier depths.
    - Interchangeable requests (ownership.engines.symmetry.equivariance_problem decides it
      from the graphs, as for `--symmetry`): renaming the requests by a permutation π maps an
      execution to an execution of the same length, a flag or a failing property to the same
      property, a spec error to a spec error. The unrolling keeps only prefixes w with
      w <= π(w), lexicographically by binding index, for each π it lists (the lex-leader
      constraint; `same[p][j]` says that w and π_j(w) agree up to step p).

    Together they keep, of all the prefixes that commuting swaps and renamings make of one,
    the least word w*. It satisfies both rules: it is the least of its own rearrangements, and
    π(w*) is one of the words (the commuting relation is cut down until renaming keeps it, so
    a rearrangement renamed is a rearrangement of the renamed word), hence w* <= π(w*). The
    last step comes along renamed by the same π. So a query at depth k is satisfiable exactly
    when it is without the reductions: the same verdict, the same shortest length and the same
    first property at it, and the same states reachable in k steps up to renaming (the
    sometimes-properties, whether the unrolling ends). A counterexample may be another
    shortest one than the explicit engine's. Not used with liveness (a lasso needs the states
    in between); no renamings with symbolic parameters or lemmas, which the symmetry check
    does not cover."""

    def __init__(self, enc: Encoding, *, symmetric: bool) -> None:
        import itertools

        from .symmetry import binding_map

        model = enc.model
        n = len(model.bindings)
        maps: list[list[int]] = []
        if symmetric:
            ident = tuple(range(1, model.requests + 1))
            if model.requests <= 5:
                perms = [p for p in itertools.permutations(ident) if p != ident]
            else:  # (adjacent transpositions: any set of renamings is sound, these are few)
                perms = [ident[:i] + (ident[i + 1], ident[i]) + ident[i + 2:] for i in range(len(ident) - 1)]
            for perm in perms:
                bmap = binding_map(model, perm)
                if bmap is not None:
                    maps.append(bmap)
        commute = {(a, b) for a, others in enumerate(enc.commuting()) for b in others}
        while maps:  # the largest part of the relation that renaming keeps
            kept = {(a, b) for a, b in commute if all((m[a], m[b]) in commute for m in maps)}
            if kept == commute:
                break
            commute = kept
        self.enc = enc
        self.n = n
        #: for each binding a, the larger bindings that commute with it, and all that do
        self.larger = [[b for b in range(a + 1, n) if (a, b) in commute] for a in range(n)]
        self.commuting = [[b for b in range(n) if (a, b) in commute] for a in range(n)]
        #: for each renaming: the bindings it maps to a smaller one, and those it keeps
        self.maps = [([b for b in range(n) if m[b] < b], [b for b in range(n) if m[b] == b]) for m in maps]
        self.later: list[list[Any]] = []
        self.same: list[list[Any]] = []
        self.defs: list[list[Any]] = []

    def __bool__(self) -> bool:
        return any(self.larger) or bool(self.maps)

    def define(self, p: int, act: Any) -> list[Any]:
        """The definitions of `later[p]` and `same[p]` from the binding `act` of step p
        (0-based; the positions are defined in order, and asked again get the same list)."""
        import z3

        if p < len(self.defs):
            return self.defs[p]
        assert p == len(self.defs), "positions are defined in order"
        out: list[Any] = []
        later: list[Any] = []
        for a in range(self.n):
            if not self.commuting[a]:
                later.append(None)
                continue
            here = z3.Or([act == b for b in self.larger[a]] or [z3.BoolVal(False)])
            before = self.later[p - 1][a] if p else None
            if before is not None:
                here = z3.Or(here, z3.And(z3.Or([act == b for b in self.commuting[a]]), before))
            v = z3.Bool(f"later!{p}!{a}")
            out.append(v == here)
            later.append(v)
        same: list[Any] = []
        for i, (_, kept) in enumerate(self.maps):
            v = z3.Bool(f"same!{p}!{i}")
            agree = z3.Or([act == b for b in kept] or [z3.BoolVal(False)])
            out.append(v == (z3.And(self.same[p - 1][i], agree) if p else agree))
            same.append(v)
        self.later.append(later)
        self.same.append(same)
        self.defs.append(out)
        return out

    def restrict(self, p: int, act: Any) -> list[Any]:
        """Step p's binding `act` keeps the prefix canonical (needs `define(p - 1)`)."""
        import z3

        if p == 0:
            return [z3.And([act != b for b in smaller]) for smaller, _ in self.maps if smaller]
        out = [z3.Implies(act == a, z3.Not(v)) for a, v in enumerate(self.later[p - 1]) if v is not None]
        for (smaller, _), agreed in zip(self.maps, self.same[p - 1]):
            if smaller:
                out.append(z3.Implies(agreed, z3.And([act != b for b in smaller])))
        return out


def interchangeable(enc: Encoding, *, symbolic: Sequence[SymbolicParam], lemmas: bool) -> bool:
    """Whether the unrolling may keep one renaming of the requests (NOTE(canonical-order)):
    the symmetry check of `--symmetry` passes, and no symbolic parameter or lemma (which it
    does not check) is in play."""
    model = enc.model
    if symbolic or (lemmas and enc.lemmas) or model.requests < 2:
        return False
    from ..interpret.batch import BatchModel
    from .symmetry import equivariance_problem

    try:  # (the check reads the batch interpreter's graph; a wide page set's every limb: NOTE(wide-symmetry))
        problem = equivariance_problem(model, BatchModel(model))
    except Exception:  # a spec that graph cannot hold is explored under every renaming: still exact
        return False
    return problem is None


__all__ = ["CanonicalOrder", "interchangeable"]
