"""Pins (a known bug, xfail in tests/engines/test_symmetry.py): a request id copied into an int slot
through `If` or `select` must make symmetry refuse the spec, as `s.count = s.last` does.

`finish(r)` copies the previous `last` request id into `count`, an int slot that renaming
the requests does not relabel: via `If(s.last == 0, 0, s.last)` (via=0) or
`select([s.last, s.last], s.count // 4)` (via=1). The requests are then not interchangeable:
the plain search finds `count` = 1 (r1 finished, then r2) at step 2, a violation of
`count_not_one`. ownership/engines/symmetry.py accepts the spec, and the reduced search says
"verified" (3 states standing for 5, where the plain search has 4).
"""

from enum import IntEnum

from ownership import If, Request, Spec, action, ints, invariant, param, per_request, select, state
from ownership.lang.declare import RequestDomain


class Stage(IntEnum):
    NEW = 0
    DONE = 1


class SymRequestIntoInt(Spec):
    requests = param(2, "requests")
    via = param(0, "0: If, 1: select")

    last = state(RequestDomain(none="nobody"), 0)
    count = state(ints(0, 3), 0)
    stage = per_request(Stage, Stage.NEW)

    @action
    def finish(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        if self.via == 0:
            s.count = If(s.last == 0, 0, s.last)
        else:
            s.count = select([s.last, s.last], s.count // 4)
        s.last = r
        s.stage[r] = Stage.DONE

    @invariant
    def count_not_one(self, s):
        return s.count != 1
