"""A transfer between keyed pools (issue 13, item 6): prefix-cache blocks, keyed by block hash,
pulled from prefill to decode as vLLM's NIXL connector does with prefix caching on both nodes
(docs/protocols/vllm.md): the destination blocks receive the source blocks' keys, in order,
when the READ lands.

Prefill computes prefix k1 into one block and the request's own key k2 into another; decode
pulls both into its two blocks. Decode that attends before the READ has landed reads blocks
that hold no key yet (stale-read at step 3). The fix `wait-for-the-read` waits for it; then
decode's first block holds k1 and its second k2, as it expects."""

from ownership import Request, Spec, action, fix, ints, page, per_request, pool

NEW, PREFILLED, PULLING, DONE = 0, 1, 2, 3


class KeyedTransfer(Spec):
    requests = 1
    wait_for_the_read = fix("decode attends only once the READ has landed")

    prefill = pool(2, keys=2, order="lowest")
    decode = pool(2, keys=2, order="lowest")
    stage = per_request(ints(0, 3), NEW)
    landed = per_request(bool, False)

    @action
    def prefill_forward(self, s, r: Request):
        s.require(s.stage[r] == NEW)
        blocks = s.alloc("prefill", r, 2)
        s.write("prefill", r, page(0), key=1)
        s.write("prefill", r, page(1), key=2)
        s.stage[r] = PREFILLED
        s.require(blocks == page(0) | page(1))

    @action
    def decode_pull(self, s, r: Request):
        """Decode allocates its blocks and starts the NIXL READ of prefill's."""
        s.require(s.stage[r] == PREFILLED)
        s.send(r, "prefill", s.owned("prefill", r), "decode", s.alloc("decode", r, 2))
        s.stage[r] = PULLING

    @action
    def read_lands(self, s, r: Request):
        s.require((s.stage[r] == PULLING) & ~s.landed[r])
        s.land(r)
        s.landed[r] = True

    @action
    def decode_attend(self, s, r: Request):
        s.require(s.stage[r] == PULLING)
        if self.wait_for_the_read:
            s.require(s.landed[r])
        s.read("decode", r, page(0), key=1)
        s.read("decode", r, page(1), key=2)
        s.stage[r] = DONE
