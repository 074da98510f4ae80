# Finding: a division by zero before a `require` that fails is an error in the reference only.
#
# The concrete interpreter runs the action in order: `1 // s.n` raises before the second
# require could disable the action. ownership/interpret/smt.py, Encoding._binding, checks an
# assignment under the guards before it (Traced.assigned), but conjoins the errors of partial
# operations (division, modulo, shifts) with the WHOLE guard: z3.And(guard, Or(partial)), so
# bmc and prove verify; batch verifies too (no division errors at all, see
# action_divides_by_zero.py). Also: a division whose value is not used (a local that nothing
# reads) is in no graph, and only the reference raises on it.
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference spec-error at depth 1: divides_by_zero_before_a_require.py:33; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at divides_by_zero_before_a_require.py:33
#   explicit  spec-error at divides_by_zero_before_a_require.py:33: ZeroDivisionError in action go(): integer division or modulo by zero
#   batch     verified (1 states)
#   symmetry  verified (1 states, 1 before symmetry)
#   bmc       verified
#   prove     verified
#   fuzz      spec-error at divides_by_zero_before_a_require.py:33: ZeroDivisionError in action go(): integer division or modulo by zero
#     batch-step: go() at {'n': 0}: batch disables the step, the reference raises a SpecError at line 33
#     z3-step: go() at {'n': 0}: z3's error condition is False, the reference raises a SpecError at line 33
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference spec-error at depth 1: divides_by_zero_before_a_require.py:44; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at divides_by_zero_before_a_require.py:44
#   explicit  spec-error at divides_by_zero_before_a_require.py:44: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   batch     spec-error at divides_by_zero_before_a_require.py:44: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   symmetry  spec-error at divides_by_zero_before_a_require.py:44: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   bmc       spec-error at divides_by_zero_before_a_require.py:44: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   prove     spec-error at divides_by_zero_before_a_require.py:44: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   fuzz      spec-error at divides_by_zero_before_a_require.py:44: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
# (end of answers)

from ownership import Spec, action, ints, state


class DividesByZeroBeforeARequire(Spec):
    n = state(ints(0, 1), 0)

    @action
    def go(self, s):
        s.require((1 // s.n) >= 0)
        s.require(s.n == 1)
