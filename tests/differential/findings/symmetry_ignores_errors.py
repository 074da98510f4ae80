# Finding: the symmetry check compares final writes, not the errors an action can raise
# (issue 11, item 7).
#
# Only check(r=r1) leaves the domain of n (n[r1] := 2), and only in an assignment that a later
# one overwrites. ownership/engines/symmetry.py, equivariance_problem, compares the guards, the
# final writes and the flags of the traced bindings (Traced.writes), not Traced.assigned, so
# --symmetry accepts the spec as symmetric (6 states, 9 before symmetry). Today batch misses
# this error without symmetry too (overwritten_out_of_domain.py); once it checks every
# assignment, a search with symmetry can still miss it: the representative of "one request
# running" is the state in which r2 runs (signatures sorted ascending), where check(r=r2)
# raises nothing.
#
# params: requests=2
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference spec-error at depth 2: symmetry_ignores_errors.py:49; 6 states, 9 transitions, deepest 3, longest execution unbounded; events: depth 2: error at symmetry_ignores_errors.py:49; depth 3: error at symmetry_ignores_errors.py:49; depth 4: error at symmetry_ignores_errors.py:49
#   explicit  spec-error at symmetry_ignores_errors.py:49: in action check(r=r1): n[r1] := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...)
#   batch     verified (9 states, 18 transitions)
#   symmetry  verified (6 states, 12 transitions, 9 before symmetry)
#   bmc       spec-error at symmetry_ignores_errors.py:49: in action check(r=r1): n[r1] := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) (found by the symbolic engine after 2 steps: start(r=r1), check(r=r1))
#   prove     spec-error at symmetry_ignores_errors.py:49: in action check(r=r1): n[r1] := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) (found by the symbolic engine after 2 steps: start(r=r1), check(r=r1))
#   fuzz      spec-error at symmetry_ignores_errors.py:49: in action check(r=r1): n[r1] := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...)
#     batch-step: check(r=r1) at {'stage': {'r1': 'RUNNING', 'r2': 'NEW'}, 'n': {'r1': 0, 'r2': 0}}: batch takes the step, the reference raises a SpecError at line 49
#     batch-step: check(r=r1) at {'stage': {'r1': 'RUNNING', 'r2': 'RUNNING'}, 'n': {'r1': 0, 'r2': 0}}: batch takes the step, the reference raises a SpecError at line 49
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference spec-error at depth 2: symmetry_ignores_errors.py:60; 6 states, 9 transitions, deepest 3, longest execution unbounded; events: depth 2: error at symmetry_ignores_errors.py:60; depth 3: error at symmetry_ignores_errors.py:60; depth 4: error at symmetry_ignores_errors.py:60
#   explicit  spec-error at symmetry_ignores_errors.py:60: in action check(r=r1): n[r1] := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
#   batch     spec-error at symmetry_ignores_errors.py:60: in action check(r=r1): n[r1] := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
#   symmetry  refused: --symmetry: the requests of this spec are not interchangeable: action check(r=r1) does not behave like check(r=r2) with the requests renamed. Check it without --symmetry.
#   bmc       spec-error at symmetry_ignores_errors.py:60: in action check(r=r1): n[r1] := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
#   prove     spec-error at symmetry_ignores_errors.py:60: in action check(r=r1): n[r1] := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
#   fuzz      spec-error at symmetry_ignores_errors.py:60: in action check(r=r1): n[r1] := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
# (end of answers)

from enum import IntEnum

from ownership import Request, Spec, action, ints, per_request


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1


class SymmetryIgnoresErrors(Spec):
    stage = per_request(Stage, Stage.NEW)
    n = per_request(ints(0, 1), 0)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.stage[r] = Stage.RUNNING

    @action
    def check(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
        s.n[r] = s.n[r] + (2 if r == 1 else 0)
        s.n[r] = 1
