"""The GLM-5.3 leak as a small protocol of its own: the benchmark suite's second model.

Issue 14 asks for an independent model of the incident beside specs/sglang_pd.py, written both
in the spec language (this file) and in Promela (incident.pml beside it), so that ownership and
SPIN are compared on a model that was not written from the other's code. It keeps what the
incident is made of (docs/incident.md) and nothing of SGLang's queues:

- one decode pool of `pages` pages handed out lowest first; it is warm (every page starts
  holding an earlier request's KV, r0), because a real pool is never zeroed;
- `requests` one-shot requests, each with a prompt of 1..`longest` pages, chosen when it
  arrives; prefill's capacity is `longest` - 1 pages, so the longest prompts are rejected;
- Arrive; Admit (decode reserves the prompt's pages, the lowest free ones); Write (prefill's
  transfer writes the next page of the request's table); Read (decode attends over the whole
  table once prefill says the transfer is complete); Finish (decode frees the table);
  Cancel (the client gives up before the read); Abort (prefill stops writing: it acknowledges
  a cancel, or, with the fix, rejects an over-long prompt at the door); Release (decode frees
  the table once the abort is acknowledged, never before: a late write would land in a page
  that another request may own by then).

Without the fix, prefill replaces a rejected prompt by a one-page placeholder, writes that
page and says "complete"; decode reads all the pages it reserved: a stale read of r0's or an
earlier customer's KV (bug C1 of docs/bugs.md, SGLang issues #30233 and #32605, fixed by
#36988 and #38935). With `withdraw-rejected` (SGLang 0.5.22, the engine fix of docs/incident.md)
a rejected request never reaches decode's admission; the search then verifies every property.

Abstracts away: tokens (lengths are in pages), prefill's own pool, the bootstrap handshake and
the transfer's in-flight window (a write is one atomic step), and the order of pages within a
table (a write fills the lowest page not yet written). Parameters: pages (P), requests (R),
longest (L); benchmarks/run.py measures it at sizes of over 5 M states.
"""

from enum import IntEnum

from ownership import If, Request, Spec, action, count, first, fix, ints, param, per_request, pool


class S(IntEnum):
    """Where a request is."""

    NEW = 0         # not arrived
    ARRIVED = 1     # prompt known, waiting for decode's pages
    ADMITTED = 2    # pages reserved; prefill's transfer writes them one by one
    DECODING = 3    # decode read the table: the request is being decoded
    DONE = 4        # finished, pages freed
    CANCELLING = 5  # the client cancelled; prefill has not acknowledged yet
    ABORTED = 6     # prefill acknowledged (or rejected at the door): it writes no more
    RELEASED = 7    # decode freed the table after the abort


class Incident(Spec):
    """A rejected over-long prompt, its one-page placeholder, and decode's eight reserved pages."""

    pages = param(8, "decode KV pool, in pages", minimum=1)
    requests = param(3, "one-shot requests", minimum=1)
    longest = param(3, "longest prompt, in pages; prefill's capacity is one page less", minimum=1)

    withdraw_rejected = fix("SGLang 0.5.22: a rejected request is withdrawn at decode's admission queue,"
                            " before allocation and transfer (docs/incident.md, fix 2)")

    decode = pool(pages, order="lowest", warm=True,
                  help="decode's KV pages, never zeroed: each starts with an earlier request's KV (r0)")

    Length = ints(1, longest)

    stage = per_request(S, S.NEW)
    length = per_request(ints(0, longest))    # the prompt, in pages
    sent = per_request(ints(0, longest))      # pages prefill's transfer has written
    table = per_request(decode)               # decode's block table for the request

    def rejected(self, s, r):
        """Prefill cannot hold the prompt (its capacity is `longest` - 1 pages)."""
        return s.length[r] > self.longest - 1

    def to_send(self, s, r):
        """Pages prefill will write: the one-page placeholder for a rejected prompt."""
        return If(self.rejected(s, r), 1, s.length[r])

    @action(actor="client")
    def arrive(self, s, r: Request, n: Length):
        """A prompt of n pages arrives at both nodes."""
        s.require(s.stage[r] == S.NEW)
        s.length[r] = n
        s.stage[r] = S.ARRIVED

    @action(actor="decode")
    def admit(self, s, r: Request):
        """Decode reserves the prompt's pages, the lowest free ones. Without the fix its
        admission queue checks only whether the request finished, not whether it was rejected."""
        s.require(s.stage[r] == S.ARRIVED)
        if self.withdraw_rejected:
            s.require(~self.rejected(s, r))
        s.table[r] = s.alloc("decode", r, s.length[r])
        s.stage[r] = S.ADMITTED

    @action(actor="prefill")
    def write(self, s, r: Request):
        """Prefill's transfer writes the next page of the request's table (until it hears of
        an abort)."""
        writing = (s.stage[r] == S.ADMITTED) | (s.stage[r] == S.CANCELLING)
        s.require(writing & (s.sent[r] < self.to_send(s, r)) & (s.sent[r] < count(s.table[r])))
        s.write("decode", r, first(s.table[r], s.sent[r] + 1))
        s.sent[r] = s.sent[r] + 1

    @action(actor="decode")
    def read(self, s, r: Request):
        """Prefill says the transfer is complete; decode attends over its whole table."""
        s.require((s.stage[r] == S.ADMITTED) & (s.sent[r] == self.to_send(s, r)))
        s.read("decode", r, s.table[r])
        s.stage[r] = S.DECODING

    @action(actor="decode")
    def finish(self, s, r: Request):
        """The request is decoded to the end; decode frees its table."""
        s.require(s.stage[r] == S.DECODING)
        s.free("decode", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = S.DONE

    @action(actor="client")
    def cancel(self, s, r: Request):
        """The client gives up before decode read the request; prefill must be told."""
        s.require((s.stage[r] == S.ARRIVED) | (s.stage[r] == S.ADMITTED))
        s.stage[r] = S.CANCELLING

    @action(actor="prefill")
    def abort(self, s, r: Request):
        """Prefill stops the request: it acknowledges a cancel, or (with the fix) withdraws a
        rejected prompt before decode admits it."""
        door = (s.stage[r] == S.ARRIVED) & self.rejected(s, r) if self.withdraw_rejected else False
        s.require((s.stage[r] == S.CANCELLING) | door)
        s.stage[r] = S.ABORTED

    @action(actor="decode")
    def release(self, s, r: Request):
        """Decode frees the table of an aborted request, once prefill acknowledged the abort."""
        s.require(s.stage[r] == S.ABORTED)
        s.free("decode", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = S.RELEASED

    def finished(self, s, r):
        """A request that is done or released must own no page (leak)."""
        return (s.stage[r] == S.DONE) | (s.stage[r] == S.RELEASED)

    def describe(self, s, step):
        """Each step of a trace in the protocol's words."""
        r = step.args.get("r")
        if step.action is None:
            return f"decode pool: {self.pages} pages of old KV (r0); prefill holds prompts up to {self.longest - 1} pages"
        if step.action == "arrive":
            n = s.length[r]
            placeholder = n > self.longest - 1
            return f"a prompt of {n} pages arrives" + (": prefill rejects it (one-page placeholder)" if placeholder else "")
        if step.action == "admit":
            return f"decode reserves {s.table[r].listed}"
        if step.action == "write":
            return f"prefill writes page {s.sent[r]} of {len(s.table[r])}"
        if step.action == "read":
            return f"decode attends over {s.table[r].listed}"
        return None
