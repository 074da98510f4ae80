"""Pins: a transfer out of a page of the FIRST pool (outbound only) makes in_flight() true.

Only the prefill node is modelled: a transfer reads out of a prefill page (its destination is
on a node not modelled, so the destination page set is empty), so the transfer is marked only
as `outbound`, in `prefill`, the first pool declared. The request frees its page only once
`~s.in_flight(r)`: verified. An in_flight() that skipped the first pool, or looked at inbound
transfers only, would let the free through while the page is still read: a false
free-in-flight.
"""

from ownership import Request, Spec, action, param, per_request, pool


class InFlightOutbound(Spec):
    requests = param(1, "requests")

    prefill = pool(1)
    decode = pool(1, help="declared second, not used by the transfer")
    table = per_request(prefill)

    @action
    def push(self, s, r: Request):
        """Prefill computes the KV into a page and the transfer out of it starts."""
        s.require(s.table[r] == 0)
        pages = s.alloc("prefill", r, 1)
        s.write("prefill", r, pages)
        s.send(r, "prefill", pages, "decode", 0)
        s.table[r] = pages

    @action
    def landed(self, s, r: Request):
        """The transfer completes."""
        s.require(s.in_flight(r))
        s.land(r)

    @action
    def release(self, s, r: Request):
        """Prefill gives the page back, but never under a transfer."""
        s.require((s.table[r] != 0) & ~s.in_flight(r))
        s.free("prefill", r, s.table[r])
        s.table[r] = 0
