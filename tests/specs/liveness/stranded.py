"""Decode reserves pages for a request that prefill retires without a word (0.5.20's cost).

Decode's pages come back only through `timeout`, the waiting timeout; with fix `no-timeout`
nothing frees them and the run stops with the pages held: eventually-released fails. The
measure `stranded-pages` counts what the timeout costs, and `retired-pages-return` bounds
how late they return (`timeout_steps` steps after the retire)."""

from enum import IntEnum

from ownership import (
    If,
    Request,
    Spec,
    action,
    count,
    eventually,
    fix,
    leads_to,
    measure,
    param,
    per_request,
    pool,
)


class D(IntEnum):
    NEW = 0
    WAITING = 1
    RUNNING = 2
    GONE = 3


class Stranded(Spec):
    requests = param(1, "requests")
    timeout_steps = param(1, "how many steps after the retire the pages must be back")
    decode = pool(2, help="decode's KV pages")
    liveness = ("eventually-released",)

    no_timeout = fix("a decode without the waiting timeout (a bug on purpose)")

    stage = per_request(D, D.NEW)
    retired = per_request(bool, False)
    table = per_request(decode)

    @action
    def prealloc(self, s, r: Request):
        """Decode reserves the request's pages and waits for prefill."""
        s.require(s.stage[r] == D.NEW)
        s.table[r] = s.alloc("decode", r, 2)
        s.stage[r] = D.WAITING

    @action
    def retire(self, s, r: Request):
        """Prefill rejects the request and tells no one."""
        s.require((s.stage[r] == D.WAITING) & ~s.retired[r])
        s.retired[r] = True

    @action
    def transfer(self, s, r: Request):
        """Prefill sends the KV; decode writes it and runs."""
        s.require((s.stage[r] == D.WAITING) & ~s.retired[r])
        s.write("decode", r, s.table[r])
        s.stage[r] = D.RUNNING

    @action
    def finish(self, s, r: Request):
        """The request finishes; decode frees its pages."""
        s.require(s.stage[r] == D.RUNNING)
        s.free("decode", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = D.GONE

    @action
    def timeout(self, s, r: Request):
        """The waiting timeout fires for a request prefill retired."""
        s.require((s.stage[r] == D.WAITING) & s.retired[r] & (not self.no_timeout))
        s.free("decode", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = D.GONE

    @eventually
    def every_request_leaves(self, s, r):
        """Each request leaves decode."""
        return s.stage[r] == D.GONE

    @leads_to(within=timeout_steps)
    def retired_pages_return(self, s, r):
        """Once prefill retired a request, its decode pages are back within timeout_steps steps."""
        return s.retired[r], s.stage[r] == D.GONE

    @measure
    def stranded_pages(self, s):
        """Decode pages held for requests prefill retired (held until the timeout)."""
        total = 0
        for r in range(1, self.requests + 1):
            total = total + If(s.retired[r] & (s.stage[r] == D.WAITING), count(s.table[r]), 0)
        return total
