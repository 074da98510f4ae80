"""A request writes into a page it was never given (the message must not say "freed")."""

from ownership import Request, Spec, action, page, per_request, pool


class WriteNeverHeld(Spec):
    requests = 2
    kv = pool(1)
    done = per_request(bool, False)

    @action
    def take(self, s, r: Request):
        """r2 takes the only page."""
        if r != 2:
            s.require(False)
        s.require(~s.done[r])
        s.alloc("kv", r, 1)
        s.done[r] = True

    @action
    def scribble(self, s, r: Request):
        """r1 writes page 0 without ever holding it."""
        if r != 1:
            s.require(False)
        s.write("kv", r, page(0))
