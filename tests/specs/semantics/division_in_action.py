"""Division and modulo by a slot that reaches 0 in an action (issue 11, 2).

`s.x // s.x` raises once x is 0, after two steps of `down`: a spec error with those steps,
in every engine (the batch engine once said verified)."""

from ownership import Spec, action, ints, state


class DivisionInAction(Spec):
    requests = 1
    x = state(ints(0, 3), 2)
    y = state(ints(0, 3), 0)

    @action
    def down(self, s):
        s.require(s.x > 0)
        s.x = s.x - 1

    @action
    def divide(self, s):
        s.y = 6 // (s.x + 1) % 4 + s.x // s.x - 1
