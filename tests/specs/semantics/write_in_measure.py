"""A @measure that writes the state (NOTE(read-only-properties)): refused where it writes, as
an invariant's write is; a measure is evaluated by the liveness search only (`--measure`)."""

from ownership import Spec, action, ints, measure, state


class WriteInMeasure(Spec):
    requests = 1
    x = state(ints(0, 3), 0)

    @action
    def bump(self, s):
        s.require(s.x < 3)
        s.x = s.x + 1

    @measure
    def how_far(self, s):
        """How far x got (it writes 0 first)."""
        s.x = 0
        return s.x
