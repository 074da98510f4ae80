# Finding: a value outside its slot's domain, written and then overwritten in the same action
# (issue 11, item 2).
#
# `s.n = s.n + 2` leaves the domain 0..1 and `s.n = 1` repairs it. The concrete interpreter
# checks every assignment and raises; bmc and prove do too (Encoding._binding checks
# Traced.assigned). The batch interpreter checks only the final value of each slot
# (ownership/interpret/batch.py compiles Traced.writes into its bad-write mask): batch and
# symmetry verify.
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference spec-error at depth 1: overwritten_out_of_domain.py:31; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at overwritten_out_of_domain.py:31
#   explicit  spec-error at overwritten_out_of_domain.py:31: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...)
#   batch     verified (2 states, 2 transitions)
#   symmetry  verified (2 states, 2 transitions, 2 before symmetry)
#   bmc       spec-error at overwritten_out_of_domain.py:31: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) (found by the symbolic engine after 1 steps: go())
#   prove     spec-error at overwritten_out_of_domain.py:31: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) (found by the symbolic engine after 1 steps: go())
#   fuzz      spec-error at overwritten_out_of_domain.py:31: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...)
#     batch-step: go() at {'n': 0}: batch takes the step, the reference raises a SpecError at line 31
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference spec-error at depth 1: overwritten_out_of_domain.py:42; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at overwritten_out_of_domain.py:42
#   explicit  spec-error at overwritten_out_of_domain.py:42: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
#   batch     spec-error at overwritten_out_of_domain.py:42: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
#   symmetry  spec-error at overwritten_out_of_domain.py:42: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
#   bmc       spec-error at overwritten_out_of_domain.py:42: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
#   prove     spec-error at overwritten_out_of_domain.py:42: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
#   fuzz      spec-error at overwritten_out_of_domain.py:42: in action go(): n := 2 is outside its domain 0..1. Widen the slot's domain, or guard the action with s.require(...) before the write
# (end of answers)

from ownership import Spec, action, ints, state


class OverwrittenOutOfDomain(Spec):
    n = state(ints(0, 1), 0)

    @action
    def go(self, s):
        s.n = s.n + 2
        s.n = 1
