"""Pins: a spec with request-valued slots (the first slot declared among them) is symmetric.

`last` (the request that finished last, or nobody) is the first slot of the spec and holds a
request id; the guards compare request ids only for equality, through `If` and `select` whose
other choices are not request ids (`If(c, s.last, 0)`, `If(c, 0, s.last)`, `select([s.last, 0], k)`,
`select([0, s.last], k)`), and `by_k`, an array of request ids indexed by k. Renaming the requests relabels those values, so the spec is
symmetric: accepted, and the reduced search stands for every state. A check that overlooked a
request-valued slot, or a choice among request ids, would refuse it.
"""

from enum import IntEnum

from ownership import If, Request, Spec, action, array, ints, param, per_request, select, state
from ownership.lang.declare import RequestDomain


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2


class SymRequestSlot(Spec):
    requests = param(2, "requests")

    last = state(RequestDomain(none="nobody"), 0)
    k = state(ints(0, 1), 0)
    by_k = array(ints(0, 1), RequestDomain(none="nobody"), 0)
    stage = per_request(Stage, Stage.NEW)

    @action
    def start(self, s, r: Request):
        """A request starts, unless it finished last while k is 1."""
        s.require((s.stage[r] == Stage.NEW) & (If(s.k == 1, s.last, 0) != r) & (If(s.k == 0, 0, s.last) != r))
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
        s.stage[r] = Stage.DONE
        s.last = r

    @action
    def flip(self, s):
        s.k = 1 - s.k

    @action
    def note(self, s, r: Request):
        """r is noted at index k, unless it is noted there already."""
        s.require((s.stage[r] == Stage.DONE) & (s.by_k[s.k] != r))
        s.by_k[s.k] = r

    @action
    def again(self, s, r: Request):
        """The request that finished last comes back (while k is 0)."""
        s.require((s.stage[r] == Stage.DONE) & (select([s.last, 0], s.k) == r))
        s.stage[r] = Stage.NEW

    @action
    def later(self, s, r: Request):
        """The request that finished last comes back (while k is 1)."""
        s.require((s.stage[r] == Stage.DONE) & (select([0, s.last], s.k) == r))
        s.stage[r] = Stage.NEW
