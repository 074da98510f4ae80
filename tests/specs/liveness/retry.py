"""A transfer whose completion notice can be lost and is then retried: weak against strong fairness.

The request waits (WAITING); the notice may be lost (LOST) and re-sent (back to WAITING);
`done` completes the wait. The loop WAITING -> LOST -> WAITING can go on forever: `done` is
enabled in WAITING only, so weak fairness of `done` does not rule the loop out (it is not
enabled continuously), strong fairness does (it is enabled again and again)."""

from enum import IntEnum

from ownership import Request, Spec, action, leads_to, param, per_request, pool


class Stage(IntEnum):
    NEW = 0
    WAITING = 1
    LOST = 2
    DONE = 3


class Retry(Spec):
    """`done` without fairness: a request may wait forever."""

    requests = param(1, "requests")
    kv = pool(2, help="the KV pool")
    stage = per_request(Stage, Stage.NEW)
    table = per_request(kv)

    @action
    def start(self, s, r: Request):
        """The request takes a page and waits for its transfer."""
        s.require(s.stage[r] == Stage.NEW)
        s.table[r] = s.alloc("kv", r, 1)
        s.stage[r] = Stage.WAITING

    @action(fair=True)
    def lose(self, s, r: Request):
        """The completion notice is lost."""
        s.require(s.stage[r] == Stage.WAITING)
        s.stage[r] = Stage.LOST

    @action(fair=True)
    def resend(self, s, r: Request):
        """The notice is sent again."""
        s.require(s.stage[r] == Stage.LOST)
        s.stage[r] = Stage.WAITING

    @action
    def done(self, s, r: Request):
        """The transfer completes; the request gives its page back."""
        s.require(s.stage[r] == Stage.WAITING)
        s.free("kv", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = Stage.DONE

    @leads_to
    def a_wait_ends(self, s, r):
        """A request that waits is eventually done."""
        return s.stage[r] == Stage.WAITING, s.stage[r] == Stage.DONE


class RetryWeak(Retry):
    """`done` weakly fair: still a request may wait forever (done is disabled while LOST)."""

    @action(fair=True)
    def done(self, s, r: Request):
        """The transfer completes; the request gives its page back."""
        s.require(s.stage[r] == Stage.WAITING)
        s.free("kv", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = Stage.DONE


class RetryStrong(Retry):
    """`done` strongly fair: every wait ends."""

    @action(fair="strong")
    def done(self, s, r: Request):
        """The transfer completes; the request gives its page back."""
        s.require(s.stage[r] == Stage.WAITING)
        s.free("kv", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = Stage.DONE
