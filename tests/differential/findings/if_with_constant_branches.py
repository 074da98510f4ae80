# Finding: in the reference, `If` with Python branches is a Python value, so `~` of a
# comparison with it is -2 (the REFERENCE is wrong here; the tracer is right).
#
# `If(s.flag, 1, 2)` is a state value (it depends on a slot), and `(... == 2)` a condition.
# ownership/interpret/concrete.py, ConcreteOps.If, returns the chosen branch itself: the Python
# int 2, so `== 2` is the Python True and `~` of it -2, which is truthy: `go` is enabled in the
# reference. The tracer computes not(ite(flag, 1, 2) == 2), False: `go` is never enabled.
# The kernel is affected the same way: ownership/kernel.py, reused(), builds its page set with
# `If(other, 1 << p, 0)`, so `s.reused(pool)` is a Python int in the reference, and
# `~(s.reused("kv") == 0)` is -2 (action `go_reused`). The generated specs also showed a
# @sometimes `~(page(0) != s.reused(pool))` that the reference reaches and batch does not.
#
# params: requests=1
#
# Status: fixed by d992421 (concrete If and select give values of the language); every engine agrees since.
#
# Found at 1ddb84d; the engines answered:
#   reference verified; 4 states, 8 transitions, deepest 2, longest execution unbounded
#   explicit  verified (4 states, 8 transitions)
#   batch     verified (1 states)
#   symmetry  verified (1 states, 1 before symmetry)
#   bmc       verified
#   prove     verified
#   fuzz      bounded (3 states, 80 transitions)
#     batch-step: go() at {'flag': False, 'done': False, 'done_reused': False, 'kv.owner': ['free'], 'kv.content': ['none'], 'kv.inflight': ['none'], 'kv.outbound': ['none']}: batch disables a step that the reference takes
#     batch-step: go_reused(r=r1) at {'flag': False, 'done': False, 'done_reused': False, 'kv.owner': ['free'], 'kv.content': ['none'], 'kv.inflight': ['none'], 'kv.outbound': ['none']}: batch disables a step that the reference takes
#     z3-step: go() at {'flag': False, 'done': False, 'done_reused': False, 'kv.owner': ['free'], 'kv.content': ['none'], 'kv.inflight': ['none'], 'kv.outbound': ['none']}: z3 disables a step that the reference takes
#     z3-step: go_reused(r=r1) at {'flag': False, 'done': False, 'done_reused': False, 'kv.owner': ['free'], 'kv.content': ['none'], 'kv.inflight': ['none'], 'kv.outbound': ['none']}: z3 disables a step that the reference takes
#
# Answers at 76314f6 (python -m differential.hunt --findings rewrites this block):
#   reference verified; 1 states, 0 transitions, deepest 0, longest execution 0
#   explicit  verified (1 states)
#   batch     verified (1 states)
#   symmetry  verified (1 states, 1 before symmetry)
#   bmc       verified
#   prove     verified
#   fuzz      bounded
# (end of answers)

from ownership import If, Request, Spec, action, pool, state


class IfWithConstantBranches(Spec):
    kv = pool(1)
    flag = state(bool, False)
    done = state(bool, False)
    done_reused = state(bool, False)

    @action
    def go(self, s):
        s.require(~(If(s.flag, 1, 2) == 2))
        s.done = True

    @action
    def go_reused(self, s, r: Request):
        s.require(~(s.reused("kv") == 0))
        s.done_reused = True
