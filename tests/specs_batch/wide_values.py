"""A value beyond 64 bits in the middle of an action: (x + 1) << 62 for x = 2 is 3 * 2**62.

The concrete interpreter computes with Python's integers; the batch engine's int64 columns
would wrap, so it hands the model to the per-state engine (same search, exact) instead of
computing a wrong successor (tests/engines/test_batch.py)."""

from ownership import Spec, action, ints, state


class Wide(Spec):
    requests = 1
    x = state(ints(0, 3), 0)
    @action
    def go(self, s):
        s.require(s.x < 3)
        y = (s.x + 1) << 62
        s.x = (y >> 62)
