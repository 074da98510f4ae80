# Finding: a division by zero in an invariant (issue 11, item 3).
#
# In the initial state n = 0, so the invariant divides by zero. ownership/interpret/concrete.py,
# Concrete.state_flags, calls the invariant without turning a spec's exception into a SpecError
# (Concrete.step does): explicit, fuzz, bmc and prove end in a raw ZeroDivisionError. batch and
# symmetry verify: numpy's floor_divide gives 0. The z3 encoding has no error condition for
# state properties at all (ownership/interpret/smt.py, Encoding: `invariants` are the
# conditions only, the `_partial` of their divisions is never used).
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference spec-error at depth 0: invariant_divides_by_zero.py:37; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 0: error at invariant_divides_by_zero.py:37
#   explicit  crash: ZeroDivisionError: integer division or modulo by zero (at concrete.py:68)
#   batch     verified (2 states, 2 transitions)
#   symmetry  verified (2 states, 2 transitions, 2 before symmetry)
#   bmc       crash: ZeroDivisionError: integer division or modulo by zero (at concrete.py:68)
#   prove     crash: ZeroDivisionError: integer division or modulo by zero (at concrete.py:68)
#   fuzz      crash: ZeroDivisionError: integer division or modulo by zero (at concrete.py:68)
#     reference: raises ZeroDivisionError: integer division or modulo by zero at invariant_divides_by_zero.py:37, not a SpecError
#     batch-step: state {'n': 0}: the reference raises ZeroDivisionError: integer division or modulo by zero judging it; batch accepts it
#     z3-step: state {'n': 0}: the reference raises ZeroDivisionError: integer division or modulo by zero judging it; z3 has no error condition for state properties
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference spec-error at depth 0: invariant_divides_by_zero.py:48; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 0: error at invariant_divides_by_zero.py:48
#   explicit  spec-error at invariant_divides_by_zero.py:48: in invariant positive: `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   batch     spec-error at invariant_divides_by_zero.py:48: in invariant positive: `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   symmetry  spec-error at invariant_divides_by_zero.py:48: in invariant positive: `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   bmc       spec-error at invariant_divides_by_zero.py:48: in invariant positive: `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   prove     spec-error at invariant_divides_by_zero.py:48: in invariant positive: `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
#   fuzz      spec-error at invariant_divides_by_zero.py:48: in invariant positive: `` by zero. Guard the action with s.require(divisor != 0) before it, or divide by If(d == 0, 1, d)
# (end of answers)

from ownership import Spec, action, ints, invariant, state


class InvariantDividesByZero(Spec):
    n = state(ints(0, 1), 0)

    @action
    def go(self, s):
        s.n = 1

    @invariant
    def positive(self, s):
        return (1 // s.n) >= 0
