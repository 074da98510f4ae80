"""Pins: a free-in-flight names the request whose transfer is in flight, not the one freeing.

r2's transfer is aimed at a stale target, the decode page that r1 reserved (a wrong block id
in r2's transfer request); r1 then gives the page back while r2's write is still in flight:
free-in-flight at step 3, by r1, under a transfer of r2. With `source=1` it is r2 that gives
its prefill page back while the transfer is still reading out of it: free-in-flight at
step 2, under the outbound transfer of r2.
"""

from ownership import Spec, action, page, param, pool


class FreeUnderOther(Spec):
    requests = param(2, "requests")
    source = param(0, "1: r2 frees its source page instead")

    prefill = pool(1)
    decode = pool(1)

    @action
    def reserve_r1(self, s):
        """r1 reserves decode page 0."""
        s.require(s.free_pages("decode") == page(0))
        s.alloc("decode", 1, 1)

    @action
    def push_r2(self, s):
        """r2's prefill computes its KV and sends it into decode page 0 (r1's)."""
        s.require(s.free_pages("prefill") == page(0))
        got = s.alloc("prefill", 2, 1)
        s.write("prefill", 2, got)
        s.send(2, "prefill", got, "decode", page(0))

    @action
    def release_r1(self, s):
        """r1 gives its decode page back."""
        s.require(s.holds("decode", 0, 1) & (self.source == 0))
        s.free("decode", 1, page(0))

    @action
    def release_src_r2(self, s):
        """r2 gives its prefill page back."""
        s.require(s.holds("prefill", 0, 2) & (self.source == 1))
        s.free("prefill", 2, page(0))
