"""Pins: symmetry is refused for a spec that names r1 inside an `If`, wherever in it.

`start` requires an `If` that names r1's stage: in its condition (where=0), its then-branch
(where=1) or its else-branch (where=2); everything else treats the requests alike. The
symmetry check must look at all three parts of the `If`.
"""

from enum import IntEnum

from ownership import If, Request, Spec, action, param, per_request


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2


class SymIfR1(Spec):
    requests = param(2, "requests")
    where = param(0, "0: r1 in the condition, 1: in the then-branch, 2: in the else-branch")

    stage = per_request(Stage, Stage.NEW)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        mine = s.stage[r] == Stage.NEW
        r1_new = s.stage[1] == Stage.NEW
        if self.where == 0:
            s.require(If(r1_new, mine, True))
        elif self.where == 1:
            s.require(If(mine, r1_new, True))
        else:
            s.require(If(~mine, True, r1_new))
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
        s.stage[r] = Stage.DONE
