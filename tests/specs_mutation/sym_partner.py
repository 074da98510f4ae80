"""Pins: requests that hold each other's ids (a per-request slot of request ids) are symmetric,
and the reduced search stands for every state, at 3 requests.

`pair(r, q)` makes q the partner of r; renaming the requests moves each request's partner to
its new name and relabels the id stored there. The canonical form must not depend on those
ids (they change with the names): the representatives found stand for exactly the states of
the plain search.
"""

from ownership import Request, Spec, action, param, per_request
from ownership.lang.declare import RequestDomain


class SymPartner(Spec):
    requests = param(3, "requests")

    partner = per_request(RequestDomain(none="nobody"), 0)
    busy = per_request(bool, False)

    @action
    def pair(self, s, r: Request, q: Request):
        s.require(s.partner[r] == 0)
        s.partner[r] = q

    @action
    def work(self, s, r: Request):
        s.require((s.partner[r] != 0) & ~s.busy[r])
        s.busy[r] = True

    @action
    def unpair(self, s, r: Request):
        s.require(s.busy[r])
        s.partner[r] = 0
        s.busy[r] = False
