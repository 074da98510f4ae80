"""`~` of a Python bool combined with a condition (issue 31, item 8): refused at the `&`,
naming the `~` that made the integer and what to write instead."""

from ownership import Spec, action, ints, state


class InvertAFix(Spec):
    requests = 1
    x = state(ints(0, 3), 0)
    skip = False

    @action
    def go(self, s):
        s.require((s.x == 0) & ~self.skip)
        s.x = 1
