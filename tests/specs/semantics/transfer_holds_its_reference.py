"""A transfer's own reference on a counted page (issue 31, item 4): an offload that copies a
request's GPU pages to CPU memory while the request finishes, as KV offload connectors do.

The request drops its reference to its GPU pages when it finishes, which may be while the
store is still reading them. The standard fix of this class is that the transfer holds its
own reference until it completes (`store-holds-reference`: the store job shares the pages
when it starts and frees them after it lands): then the request's free is not the page's
last reference, the page stays allocated, and nothing is freed in flight
(NOTE(last-reference) in ownership/kernel.py). Without it the request's free is the last
reference: free-in-flight at step 3 (compute, start the store, finish).
Abstracted: one request, one page each side, the CPU side's later life."""

from ownership import Request, Spec, action, fix, ints, per_request, pool

NEW, COMPUTED, STORING, RELEASED, STORED = 0, 1, 2, 3, 4


class TransferHoldsItsReference(Spec):
    requests = 1
    store_holds_reference = fix("the store job holds its own reference to the pages until it lands")

    gpu = pool(2, counted=2, owners=("store",), help="GPU KV pages, reference-counted per holder")
    cpu = pool(2, help="CPU offload buffer")
    stage = per_request(ints(0, 4), NEW)
    landed = per_request(ints(0, 1), 0)
    table = per_request(gpu)
    buffer = per_request(cpu)

    @action
    def compute(self, s, r: Request):
        s.require(s.stage[r] == NEW)
        pages = s.alloc("gpu", r, 1)
        s.write("gpu", r, pages)
        s.table[r] = pages
        s.stage[r] = COMPUTED

    @action
    def start_store(self, s, r: Request):
        """The offload starts reading the request's pages into the CPU buffer."""
        s.require(s.stage[r] == COMPUTED)
        if self.store_holds_reference:
            s.share("gpu", "store", s.table[r])
        buf = s.alloc("cpu", r, 1)
        s.send(r, "gpu", s.table[r], "cpu", buf)
        s.buffer[r] = buf
        s.stage[r] = STORING

    @action
    def finish(self, s, r: Request):
        """The request finishes and drops its reference, the store maybe still running."""
        s.require(s.stage[r] == STORING)
        s.free("gpu", r, s.table[r])
        s.stage[r] = RELEASED

    @action
    def store_done(self, s, r: Request):
        s.require((s.stage[r] == STORING) | (s.stage[r] == RELEASED))
        s.require(s.landed[r] == 0)
        s.land(r, "cpu")
        if self.store_holds_reference:
            s.free("gpu", "store", s.table[r])
        s.landed[r] = 1

    @action
    def drop_buffer(self, s, r: Request):
        s.require((s.stage[r] == RELEASED) & (s.landed[r] == 1))
        s.free("cpu", r, s.buffer[r])
        s.stage[r] = STORED

    def finished(self, s, r):
        return s.stage[r] == STORED
