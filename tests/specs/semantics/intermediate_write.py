"""A value outside its domain, written and then overwritten in the same action (issue 11, 2).

The concrete interpreter checks every write, so `x := 5` is a spec error at line 15 in every
engine, although the action's last write is in range."""

from ownership import Spec, action, ints, state


class IntermediateWrite(Spec):
    requests = 1
    x = state(ints(0, 3), 0)

    @action
    def bump(self, s):
        s.x = s.x + 5
        s.x = 0
