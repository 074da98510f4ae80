"""A transfer that fails (issue 31, item 1): `s.kernel.fail(r)` ends it without landing, so
the decode pages keep what they held. Decode that takes the failure for a completion and
attends over its pages reads KV never written for it: stale-read at step 4 (compute and reserve,
send, fail, attend). The fix `failure-is-an-error` frees the reserved pages and ends the
request without reading them. Abstracted: one request, one page each side, the retry."""

from ownership import Request, Spec, action, fix, ints, per_request, pool

NEW, RESERVED, SENT, LANDED, FAILED, DONE = range(6)


class FailedTransfer(Spec):
    requests = 1
    failure_is_an_error = fix("decode treats a failed transfer as an error: frees its pages, reads nothing")

    prefill = pool(1)
    decode = pool(1)
    stage = per_request(ints(0, 5), NEW)
    src = per_request(prefill)
    dst = per_request(decode)

    @action
    def compute(self, s, r: Request):
        s.require(s.stage[r] == NEW)
        s.src[r] = s.alloc("prefill", r, 1)
        s.write("prefill", r, s.src[r])
        s.dst[r] = s.alloc("decode", r, 1)  # (decode reserves its page meanwhile)
        s.stage[r] = RESERVED

    @action
    def send(self, s, r: Request):
        s.require(s.stage[r] == RESERVED)
        s.send(r, "prefill", s.src[r], "decode", s.dst[r])
        s.stage[r] = SENT

    @action
    def lands(self, s, r: Request):
        s.require(s.stage[r] == SENT)
        s.land(r)
        s.free("prefill", r, s.src[r])
        s.stage[r] = LANDED

    @action
    def fails(self, s, r: Request):
        """The transport reports the transfer failed; nothing reached decode."""
        s.require(s.stage[r] == SENT)
        s.kernel.fail(r)
        s.free("prefill", r, s.src[r])
        s.stage[r] = FAILED

    @action
    def attend(self, s, r: Request):
        s.require((s.stage[r] == LANDED) | ((s.stage[r] == FAILED) & (not self.failure_is_an_error)))
        s.read("decode", r, s.dst[r])
        s.free("decode", r, s.dst[r])
        s.stage[r] = DONE

    @action
    def abort(self, s, r: Request):
        s.require((s.stage[r] == FAILED) & self.failure_is_an_error)
        s.free("decode", r, s.dst[r])
        s.stage[r] = DONE

    def finished(self, s, r):
        return s.stage[r] == DONE
