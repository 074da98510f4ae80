"""Several transfers of one request in flight at once, landing on their own (issue 13, item 6):
the KV pages in chunks and the aux (metadata) buffer apart, as SGLang's Mooncake backend sends
them (docs/protocols/sglang-pd.md: `send_kv_chunk` per chunk, then the aux data; decode polls
the aux buffer's bootstrap_room, not the pages).

Decode commits once the aux buffer has landed and attends over both KV pages: if the second
chunk is still in flight, it reads the warm pool's old KV (stale-read, a cross-request leak).
The fix `wait-for-every-chunk` commits only when no transfer of the request is in flight.
Prefill frees its pages once everything has landed (NOTE(sources-held) in ownership/kernel.py:
a source stays read until the request's last landing)."""

from ownership import Request, Spec, action, fix, ints, page, per_request, pool

NEW, SENDING, COMMITTED = 0, 1, 2


class PartialLanding(Spec):
    requests = 1
    wait_for_every_chunk = fix("decode commits only once no transfer of the request is in flight")

    p_kv = pool(2)
    p_aux = pool(1)
    d_kv = pool(2, warm=True)
    d_aux = pool(1)
    stage = per_request(ints(0, 2), NEW)
    aux_landed = per_request(bool, False)

    @action
    def send(self, s, r: Request):
        """Prefill computes the KV and sends it (two chunks) and the aux buffer."""
        s.require(s.stage[r] == NEW)
        kv = s.alloc("p_kv", r, 2)
        s.write("p_kv", r, kv)
        aux = s.alloc("p_aux", r, 1)
        s.write("p_aux", r, aux)
        s.send(r, "p_kv", kv, "d_kv", s.alloc("d_kv", r, 2))
        s.send(r, "p_aux", aux, "d_aux", s.alloc("d_aux", r, 1))
        s.stage[r] = SENDING

    @action
    def chunk_lands(self, s, r: Request, p: ints(0, 1)):
        """One chunk of the KV lands (a partial landing)."""
        s.land(r, "d_kv", page(p))

    @action
    def aux_lands(self, s, r: Request):
        s.require(s.stage[r] == SENDING)
        s.land(r, "d_aux")
        s.aux_landed[r] = True

    @action
    def prefill_frees(self, s, r: Request):
        """Prefill releases its pages once nothing of the request is in flight."""
        s.require((s.stage[r] != NEW) & ~s.in_flight(r) & (s.owned("p_kv", r) != 0))
        s.free("p_kv", r, s.owned("p_kv", r))
        s.free("p_aux", r, s.owned("p_aux", r))

    @action
    def decode_commit(self, s, r: Request):
        """Decode sees the aux buffer and attends over its pages."""
        s.require((s.stage[r] == SENDING) & s.aux_landed[r])
        if self.wait_for_every_chunk:
            s.require(~s.in_flight(r))
        s.read("d_kv", r, s.owned("d_kv", r))
        s.stage[r] = COMMITTED
