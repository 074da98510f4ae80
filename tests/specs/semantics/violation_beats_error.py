"""At one depth a violation wins over a spec error (NOTE(first-event)).

From the initial state, `crash` divides by zero (depth 1) and `leak_read` reads a never-written
page (a stale-read, depth 1). Every engine reports the stale-read; `crash` alone (with the fix
`no-read`) is a spec error at depth 1."""

from ownership import Request, Spec, action, fix, ints, page, pool, state


class ViolationBeatsError(Spec):
    requests = 1
    kv = pool(1)
    x = state(ints(0, 1), 0)
    no_read = fix("remove the read: only the spec error is left")

    @action
    def crash(self, s):
        s.x = 1 // s.x

    @action
    def leak_read(self, s, r: Request):
        if self.no_read:
            s.require(False)
        s.read("kv", r, page(0))
