"""A request that may spin in place before it finishes: weak fairness of `finish` ends the spin.

`spin` flips a flag and leaves the request where it was, so a run can go round forever
while `finish` stays enabled all along: without fairness of `finish` the wait never ends
(a lasso); weakly fair, `finish` must run on such a cycle and every wait ends. A bounded
response (`within=`) ignores fairness: the spin keeps q false for ever, past any bound."""

from ownership import Request, Spec, action, ints, leads_to, param, per_request


class Spin(Spec):
    """`finish` without fairness: a request may spin forever."""

    requests = param(1, "requests")
    stage = per_request(ints(0, 2), 0)  # 0 new, 1 spinning, 2 finished
    flipped = per_request(bool, False)

    @action
    def start(self, s, r: Request):
        """The request starts spinning."""
        s.require(s.stage[r] == 0)
        s.stage[r] = 1

    @action
    def spin(self, s, r: Request):
        """The request spins once: a flag flips, nothing else changes."""
        s.require(s.stage[r] == 1)
        s.flipped[r] = ~s.flipped[r]

    @action
    def finish(self, s, r: Request):
        """The request stops spinning."""
        s.require(s.stage[r] == 1)
        s.stage[r] = 2

    @leads_to
    def a_spin_ends(self, s, r):
        """A request that spins finishes."""
        return s.stage[r] == 1, s.stage[r] == 2


class SpinWeak(Spin):
    """`finish` weakly fair: it is enabled throughout a spin, so every spin ends; yet within
    any bound it need not (fairness says nothing about when)."""

    @action(fair=True)
    def finish(self, s, r: Request):
        """The request stops spinning."""
        s.require(s.stage[r] == 1)
        s.stage[r] = 2

    @leads_to(within=1000)
    def a_spin_ends_soon(self, s, r):
        """A request that spins finishes within 1000 steps."""
        return s.stage[r] == 1, s.stage[r] == 2
