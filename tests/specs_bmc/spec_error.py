"""Seeded spec error: an assignment leaves its slot's domain before the guard that would stop it.

`s.used = s.used + 1` runs before `s.require(...)`, and the concrete interpreter checks an
assignment when it happens: the third `take` raises a SpecError (used := 3 is outside 0..2).
Every engine must report it, none may wrap the value silently (tests/engines/test_bmc.py)."""

from ownership import Spec, action, ints, state


class Overflow(Spec):
    """A counter incremented before its bound is checked."""

    used = state(ints(0, 2), 0)

    @action
    def take(self, s):
        """Count one more page, then check the bound: too late."""
        s.used = s.used + 1
        s.require(s.used <= 2)
