"""Division by zero in an invariant (issue 11, 3): a spec error in the state where it happens
(2 steps), never a raw ZeroDivisionError, a traceback, or exit 1."""

from ownership import Spec, action, ints, invariant, state


class DivisionInInvariant(Spec):
    requests = 1
    x = state(ints(0, 3), 2)

    @action
    def down(self, s):
        s.require(s.x > 0)
        s.x = s.x - 1

    @invariant
    def ratio(self, s):
        return 6 // s.x >= 0
