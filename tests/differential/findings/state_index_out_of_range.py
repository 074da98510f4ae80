# Finding: an index that is a state value and out of range is a spec error in the reference
# only.
#
# `s.n[s.i] = 1` with i = 0 and n indexed 1..2: the concrete interpreter raises "index 0 is out
# of range for n (1..2)" (ownership/lang/state.py, ArrayView._pos). With a symbolic index the
# tracer writes every element under If(i == k, value, old) and reads with select(..., default
# 0) (ArrayView.__setitem__, __getitem__), with no error condition for an index outside the
# range: batch and symmetry verify, bmc says bounded, prove verifies; explicit and fuzz raise.
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference spec-error at depth 1: state_index_out_of_range.py:33; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at state_index_out_of_range.py:33
#   explicit  spec-error at state_index_out_of_range.py:33: index 0 is out of range for n (1..2)
#   batch     verified (1 states, 1 transitions)
#   symmetry  verified (1 states, 1 transitions, 1 before symmetry)
#   bmc       bounded (bound 1)
#   prove     verified
#   fuzz      spec-error at state_index_out_of_range.py:33: index 0 is out of range for n (1..2)
#     batch-step: mark() at {'n': {1: 0, 2: 0}, 'i': 0}: batch takes the step, the reference raises a SpecError at line 33
#     z3-step: mark() at {'n': {1: 0, 2: 0}, 'i': 0}: z3's error condition is False, the reference raises a SpecError at line 33
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference spec-error at depth 1: state_index_out_of_range.py:44; 1 states, 0 transitions, deepest 0, longest execution 0; events: depth 1: error at state_index_out_of_range.py:44
#   explicit  spec-error at state_index_out_of_range.py:44: in action mark(): index 0 is out of range for n (1..2)
#   batch     spec-error at state_index_out_of_range.py:44: in action mark(): index 0 is out of range for n (1..2)
#   symmetry  spec-error at state_index_out_of_range.py:44: in action mark(): index 0 is out of range for n (1..2)
#   bmc       spec-error at state_index_out_of_range.py:44: in action mark(): index 0 is out of range for n (1..2)
#   prove     spec-error at state_index_out_of_range.py:44: in action mark(): index 0 is out of range for n (1..2)
#   fuzz      spec-error at state_index_out_of_range.py:44: in action mark(): index 0 is out of range for n (1..2)
# (end of answers)

from ownership import Spec, action, array, ints, state


class StateIndexOutOfRange(Spec):
    n = array(ints(1, 2), ints(0, 1), 0)
    i = state(ints(0, 2), 0)

    @action
    def mark(self, s):
        s.n[s.i] = 1
