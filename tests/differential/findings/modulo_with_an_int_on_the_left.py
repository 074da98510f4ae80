# Finding: `3 % s.n` (a Python int modulo a state value) is a TypeError in every interpreter.
#
# Neither the concrete values (ownership/interpret/concrete.py, CVal) nor the tracer's terms
# (ownership/ir/tracer.py, Term) define __rmod__ (they do define __radd__, __rsub__,
# __rmul__, __rfloordiv__). The loader refuses the spec ("TypeError while tracing the spec's
# actions: unsupported operand type(s) for %: 'int' and 'Term'") and the reference, run
# without the loader, raises "TypeError in action step()". The spec is well-sorted and
# should verify (2 states: n = 2 - (3 % n) flips between 1 and 2).
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference spec-error at depth 1: modulo_with_an_int_on_the_left.py:26; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at modulo_with_an_int_on_the_left.py:26
#   loader    refuses it: TypeError while tracing the spec's actions: unsupported operand type(s) for %: 'int' and 'Term'
#     reference: fails on a well-sorted spec: tests/differential/findings/modulo_with_an_int_on_the_left.py:26: TypeError in action step(): unsupported operand type(s) for %: 'int' and 'CInt'
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference verified; 2 states, 2 transitions, deepest 1, longest execution unbounded
#   explicit  verified (2 states, 2 transitions)
#   batch     verified (2 states, 2 transitions)
#   symmetry  verified (2 states, 2 transitions, 2 before symmetry)
#   bmc       bounded (bound 2)
#   prove     verified
#   fuzz      bounded (2 states, 66 transitions)
# (end of answers)

from ownership import Spec, action, ints, state


class ModuloWithAnIntOnTheLeft(Spec):
    n = state(ints(1, 2), 1)

    @action
    def step(self, s):
        s.n = 2 - (3 % s.n)
