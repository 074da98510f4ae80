"""An action argument declared `bool` is a condition: the action gets True or False, which it
may write to a bool slot, require, negate with Python's `not` and branch on with If. It was
handed 0 or 1, an integer, and `s.armed = on` was refused ("expected a condition, got an
integer"). The invariant fails after arm(on=True), fire(): at depth 2, in every engine."""

from ownership import If, Spec, action, ints, invariant, state


class BoolArgument(Spec):
    requests = 1
    armed = state(bool, False)
    shots = state(ints(0, 3), 0)

    @action
    def arm(self, s, on: bool):
        s.require(~s.armed)
        s.armed = on
        s.shots = If(on, 0, If(not on, 1, 2))

    @action
    def fire(self, s):
        s.require(s.armed)
        s.shots = s.shots + 2

    @invariant
    def never_two(self, s):
        """No shot is fired."""
        return s.shots != 2
