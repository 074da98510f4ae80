"""The kernel's operations reached as `s.kernel.<name>` (issue 31, item 7,
NOTE(kernel-namespace)): tests/specs/semantics/transfer_holds_its_reference.py with every
operation spelled that way, which every engine answers as it answers the original."""

from ownership import Request, Spec, action, fix, ints, per_request, pool

NEW, COMPUTED, STORING, RELEASED, STORED = 0, 1, 2, 3, 4


class KernelNamespaceSpelling(Spec):
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
        pages = s.kernel.alloc("gpu", r, 1)
        s.kernel.write("gpu", r, pages)
        s.table[r] = pages
        s.stage[r] = COMPUTED

    @action
    def start_store(self, s, r: Request):
        """The offload starts reading the request's pages into the CPU buffer."""
        s.require(s.stage[r] == COMPUTED)
        if self.store_holds_reference:
            s.kernel.share("gpu", "store", s.table[r])
        buf = s.kernel.alloc("cpu", r, 1)
        s.kernel.send(r, "gpu", s.table[r], "cpu", buf)
        s.buffer[r] = buf
        s.stage[r] = STORING

    @action
    def finish(self, s, r: Request):
        """The request finishes and drops its reference, the store maybe still running."""
        s.require(s.stage[r] == STORING)
        s.kernel.free("gpu", r, s.table[r])
        s.stage[r] = RELEASED

    @action
    def store_done(self, s, r: Request):
        s.require((s.stage[r] == STORING) | (s.stage[r] == RELEASED))
        s.require(s.landed[r] == 0)
        s.kernel.land(r, "cpu")
        if self.store_holds_reference:
            s.kernel.free("gpu", "store", s.table[r])
        s.landed[r] = 1

    @action
    def drop_buffer(self, s, r: Request):
        s.require((s.stage[r] == RELEASED) & (s.landed[r] == 1))
        s.kernel.free("cpu", r, s.buffer[r])
        s.stage[r] = STORED

    def finished(self, s, r):
        return s.stage[r] == STORED
