"""A property that writes the state (NOTE(read-only-properties)): `s.x = 0` in an invariant
made the invariant read its own 0 and hold in every state, though x reaches 3; in an
interpreter that evaluates a state's properties on one view, the properties after it read the
0 too. Refused at load, with the line of the write, in every engine."""

from ownership import Spec, action, ints, invariant, state


class WriteInInvariant(Spec):
    requests = 1
    x = state(ints(0, 3), 0)

    @action
    def bump(self, s):
        s.require(s.x < 3)
        s.x = s.x + 1

    @invariant
    def below_three(self, s):
        """x stays below 3 (it does not: bump reaches 3)."""
        s.x = 0
        return s.x < 3
