# Finding: a violation and a spec error at the same depth: every engine reports the error;
# the rule is that the violation wins.
#
# At depth 1, `overflow` writes n := 2 outside 0..1 and `release` frees a free page
# (double-free). The explicit and batch engines stop at the first event in discovery order
# (binding order: `overflow` first; ownership/engines/batch.py, _Search._level, cuts at
# min(first_bad, first_flag)); bmc and prove ask for the spec error before any property
# (ownership/engines/bmc.py, _priority puts SPEC_ERROR first).
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference violated at depth 1: double-free; 1 states, 1 transitions, deepest 0, longest execution 0; events: depth 1: double-free; depth 1: error at violation_and_error_at_one_depth.py:31
#   explicit  spec-error at violation_and_error_at_one_depth.py:31: in action overflow(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...)
#   batch     spec-error at violation_and_error_at_one_depth.py:31: in action overflow(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...)
#   symmetry  spec-error at violation_and_error_at_one_depth.py:31: in action overflow(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...)
#   bmc       spec-error at violation_and_error_at_one_depth.py:31: in action overflow(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) (found by the symbolic engine after 1 steps: overflow())
#   prove     spec-error at violation_and_error_at_one_depth.py:31: in action overflow(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) (found by the symbolic engine after 1 steps: overflow())
#   fuzz      spec-error at violation_and_error_at_one_depth.py:31: in action overflow(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...)
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference violated at depth 1: double-free; 1 states, 1 transitions, deepest 0, longest execution 0; events: depth 1: double-free; depth 1: error at violation_and_error_at_one_depth.py:42
#   explicit  violated double-free in 1 steps
#   batch     violated double-free in 1 steps
#   symmetry  violated double-free in 1 steps
#   bmc       violated double-free in 1 steps
#   prove     violated double-free in 1 steps
#   fuzz      spec-error at violation_and_error_at_one_depth.py:42: in action overflow(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
# (end of answers)

from ownership import Request, Spec, action, ints, page, pool, state


class ViolationAndErrorAtOneDepth(Spec):
    kv = pool(1)
    n = state(ints(0, 1), 0)

    @action
    def overflow(self, s):
        s.n = 2

    @action
    def release(self, s, r: Request):
        s.free("kv", r, page(0))
