"""An IntEnum with a gap (NOTE(enum-consecutive)): a slot's domain is its bounds in every
interpreter, so with A=0 and C=5 a write of 3 was in the domain, no member, and every engine
failed when it showed the state (an internal error), or verified with the property skipped.
The enum is refused at the slot's line."""

from enum import IntEnum

from ownership import Spec, action, invariant, param, pool, state


class E(IntEnum):
    A = 0
    C = 5


class EnumWithAGap(Spec):
    requests = param(1, "requests")
    kv = pool(1)
    x = state(E, E.A)

    @action
    def go(self, s):
        s.require(s.x == E.A)
        s.x = 3

    @invariant
    def stays_a(self, s):
        """x stays A."""
        return s.x == E.A
