# Finding: a slot read back after it was written in the same action (issue 11, item 1).
#
# `s.ready[r] = True` then `~s.ready[r]`: the concrete interpreter reads CBool(1), so `~` is
# False and the stage becomes SAFE. The tracer reads back the Python constant it was given
# (ownership/ir/tracer.py, SymbolicState._set stores `value` as is, and _get returns
# it), and Python's `~True` is -2, which is truthy: every engine built on the traced graphs
# (batch, symmetry, bmc, prove) moves to BAD. batch reports a false violation; symmetry,
# bmc and prove crash on the disagreement with the concrete interpreter.
#
# params: requests=1
#
# Status: fixed by 210c03e (one value semantics for every interpreter); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference verified; 2 states, 1 transitions, deepest 1, longest execution 1
#   explicit  verified (2 states, 1 transitions)
#   batch     violated never-bad in 1 steps
#   symmetry  crash: AssertionError: the batch and concrete interpreters disagree on a state property (at batch.py:910)
#   bmc       crash: AssertionError: the symbolic and the concrete interpreter disagree: step 1, go(r=r1), violates a property symbolically, not concretely. This is a bug in ownership, not in the spec; please report it...
#   prove     crash: AssertionError: the symbolic and the concrete interpreter disagree: step 1, go(r=r1), violates a property symbolically, not concretely. This is a bug in ownership, not in the spec; please report it...
#   fuzz      bounded (1 states, 10 transitions)
#     batch-step: go(r=r1) at {'stage': {'r1': 'NEW'}, 'ready': {'r1': False}}: batch's successor {'stage': {'r1': 'BAD'}, 'ready': {'r1': True}} is not the reference's {'stage': {'r1': 'SAFE'}, 'ready': {'r1': True}}
#     z3-step: go(r=r1) at {'stage': {'r1': 'NEW'}, 'ready': {'r1': False}}: z3's successor {'stage': {'r1': 'BAD'}, 'ready': {'r1': True}} is not the reference's {'stage': {'r1': 'SAFE'}, 'ready': {'r1': True}}
#     z3-step: go(r=r1) at {'stage': {'r1': 'NEW'}, 'ready': {'r1': False}}: z3 has another successor than the reference's
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference verified; 2 states, 1 transitions, deepest 1, longest execution 1
#   explicit  verified (2 states, 1 transitions)
#   batch     verified (2 states, 1 transitions)
#   symmetry  verified (2 states, 1 transitions, 2 before symmetry)
#   bmc       verified
#   prove     verified
#   fuzz      bounded (1 states, 10 transitions)
# (end of answers)

from enum import IntEnum

from ownership import If, Request, Spec, action, invariant, per_request


class Stage(IntEnum):
    NEW = 0
    SAFE = 1
    BAD = 2


class ReadAfterWrite(Spec):
    stage = per_request(Stage, Stage.NEW)
    ready = per_request(bool, False)

    @action
    def go(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.ready[r] = True
        s.stage[r] = If(~s.ready[r], Stage.BAD, Stage.SAFE)

    @invariant
    def never_bad(self, s):
        ok = True
        for r in range(1, self.requests + 1):
            ok = ok & (s.stage[r] != Stage.BAD)
        return ok
