"""An invariant that forgets `return` (issue 11, 5): a spec error at its line, in every engine."""

from ownership import Spec, action, ints, invariant, state


class InvariantWithoutReturn(Spec):
    requests = 1
    x = state(ints(0, 3), 0)

    @action
    def go(self, s):
        s.require(s.x < 3)
        s.x = s.x + 1

    @invariant
    def small(self, s):
        s.x < 3  # noqa: B015 (the forgotten return is the point)
