"""Pins: a transfer landing in a page of a shared pool that two requests hold is write-unowned.

Decode publishes a page to its prefix cache as soon as the transfer into it starts, not when
the KV has landed; r2 hits the cache and takes a reference, then r1's transfer lands and
overwrites the page under r2: write-unowned at step 3 (a landing write, like any write, needs
the receiver to be the page's only holder). With the fix `publish-after-land` the page is
cached only once the transfer has landed: verified.
"""

from ownership import Request, Spec, action, fix, param, per_request, pool, state


class SharedLand(Spec):
    requests = param(2, "requests")
    publish_after_land = fix("cache the page only once the transfer into it has landed")

    prefill = pool(1)
    decode = pool(1, shared=True)
    src = per_request(prefill)
    dst = per_request(decode)
    cached = state(decode, 0)

    @action
    def transfer(self, s, r: Request):
        """Prefill computes r's KV and sends it into a decode page r reserved."""
        s.require((s.src[r] == 0) & (s.dst[r] == 0) & (s.cached == 0))
        a = s.alloc("prefill", r, 1)
        s.write("prefill", r, a)
        d = s.alloc("decode", r, 1)
        s.send(r, "prefill", a, "decode", d)
        s.src[r] = a
        s.dst[r] = d
        if not self.publish_after_land:
            s.cached = d

    @action
    def hit(self, s, r: Request):
        """A prefix-cache hit on decode: r takes a reference to the cached page."""
        s.require((s.dst[r] == 0) & (s.cached != 0))
        s.share("decode", r, s.cached)
        s.dst[r] = s.cached

    @action
    def landed(self, s, r: Request):
        """r's transfer lands in its decode page."""
        s.require(s.in_flight(r))
        s.land(r)
        if self.publish_after_land:
            s.cached = s.dst[r]
