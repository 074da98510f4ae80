# Finding: a division by zero in an action is not an error of the batch interpreter
# (issue 11, item 2).
#
# `s.m // s.n` with n = 0: the concrete interpreter raises ZeroDivisionError (a SpecError),
# and so do bmc and prove (Encoding._translate records `b == 0` as a partial condition). The
# batch interpreter computes np.floor_divide, which gives 0 (with numpy's "divide by zero"
# warning): batch and symmetry verify.
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference spec-error at depth 1: action_divides_by_zero.py:31; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at action_divides_by_zero.py:31
#   explicit  spec-error at action_divides_by_zero.py:31: ZeroDivisionError in action go(): integer division or modulo by zero
#   batch     verified (1 states, 1 transitions)
#   symmetry  verified (1 states, 1 transitions, 1 before symmetry)
#   bmc       spec-error at action_divides_by_zero.py:31: ZeroDivisionError in action go(): integer division or modulo by zero (found by the symbolic engine after 1 steps: go())
#   prove     spec-error at action_divides_by_zero.py:31: ZeroDivisionError in action go(): integer division or modulo by zero (found by the symbolic engine after 1 steps: go())
#   fuzz      spec-error at action_divides_by_zero.py:31: ZeroDivisionError in action go(): integer division or modulo by zero
#     batch-step: go() at {'n': 0, 'm': 0}: batch takes the step, the reference raises a SpecError at line 31
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference spec-error at depth 1: action_divides_by_zero.py:42; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at action_divides_by_zero.py:42
#   explicit  spec-error at action_divides_by_zero.py:42: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   batch     spec-error at action_divides_by_zero.py:42: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   symmetry  spec-error at action_divides_by_zero.py:42: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   bmc       spec-error at action_divides_by_zero.py:42: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   prove     spec-error at action_divides_by_zero.py:42: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   fuzz      spec-error at action_divides_by_zero.py:42: in action go(): `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
# (end of answers)

from ownership import Spec, action, ints, state


class ActionDividesByZero(Spec):
    n = state(ints(0, 1), 0)
    m = state(ints(0, 1), 0)

    @action
    def go(self, s):
        s.m = s.m // s.n
