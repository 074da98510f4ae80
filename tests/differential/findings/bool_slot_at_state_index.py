# Finding: a bool slot read at an index that is a state value is an int to the tracer, and
# the loader refuses `~` of it.
#
# `s.ok[s.i]` with a state index: ownership/lang/state.py, ArrayView.__getitem__, reads it
# with select(list(self), i - base, 0), and ownership/ir/tracer.py,
# SymbolicOps.select, gives every select the sort INT, whatever the elements are. So
# `~s.ok[s.i]` is refused when the spec loads ("`~` negates a condition, and this is an
# integer or a page set"), while the reference (concrete select returns the CBool element)
# runs the spec: 2 states, verified. Every engine refuses a well-sorted spec.
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference verified; 2 states, 2 transitions, deepest 1, longest execution unbounded
#   loader    refuses it: `~` negates a condition, and this is an integer or a page set. For the pages of a not in b write without(a, b); for a number compare it (x == 0).
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference verified; 2 states, 2 transitions, deepest 1, longest execution unbounded
#   explicit  verified (2 states, 2 transitions)
#   batch     verified (2 states, 2 transitions)
#   symmetry  verified (2 states, 2 transitions, 2 before symmetry)
#   bmc       bounded (bound 2)
#   prove     verified
#   fuzz      bounded (2 states, 80 transitions)
# (end of answers)

from ownership import Spec, action, array, ints, state


class BoolSlotAtStateIndex(Spec):
    ok = array(ints(1, 2), bool, False)
    i = state(ints(1, 2), 1)

    @action
    def flip(self, s):
        s.ok[s.i] = ~s.ok[s.i]
