"""Pins: a transfer into a page of the SECOND pool makes in_flight() true (every pool counts).

Only the decode node is modelled: a transfer writes into a decode page (its source is on a
node not modelled, so the source page set is empty). `decode` is the second pool declared,
and the transfer is marked only as `inflight` there (nothing is outbound). The request frees
its page only once `~s.in_flight(r)`, so the free never meets the transfer: verified. An
in_flight() that looked at the first pool only, or at outbound transfers only, would let
the free through while the write is in flight: a false free-in-flight.
"""

from ownership import Request, Spec, action, param, per_request, pool


class InFlightSecondPool(Spec):
    requests = param(1, "requests")

    prefill = pool(1, help="declared first, not used by the transfer")
    decode = pool(1)
    table = per_request(decode)

    @action
    def pull(self, s, r: Request):
        """Decode reserves a page and the transfer into it starts."""
        s.require(s.table[r] == 0)
        pages = s.alloc("decode", r, 1)
        s.send(r, "prefill", 0, "decode", pages)
        s.table[r] = pages

    @action
    def landed(self, s, r: Request):
        """The transfer lands."""
        s.require(s.in_flight(r))
        s.land(r)

    @action
    def release(self, s, r: Request):
        """Decode gives the page back, but never under a transfer."""
        s.require((s.table[r] != 0) & ~s.in_flight(r))
        s.read("decode", r, s.table[r])
        s.free("decode", r, s.table[r])
        s.table[r] = 0
