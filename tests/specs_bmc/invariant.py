"""Seeded bug (a spec invariant): two requests may be admitted although at most one should be.

Shortest counterexample: admit(r1), admit(r2), 2 steps; the spec's own invariant fails in the
state after them (tests/engines/test_bmc.py)."""

from enum import IntEnum

from ownership import Request, Spec, action, ints, invariant, per_request, state


class St(IntEnum):
    NEW = 0
    ADMITTED = 1


class AdmitOne(Spec):
    """An admission counter without a capacity check."""

    stage = per_request(St, St.NEW)
    admitted = state(ints(0, 2), 0)

    @action
    def admit(self, s, r: Request):
        """Admit a request (no capacity check: the bug)."""
        s.require(s.stage[r] == St.NEW)
        s.stage[r] = St.ADMITTED
        s.admitted = s.admitted + 1

    @invariant
    def at_most_one_admitted(self, s):
        """At most one request is admitted at a time."""
        return s.admitted <= 1
