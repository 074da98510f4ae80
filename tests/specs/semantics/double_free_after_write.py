"""A double free hidden behind a read after a write (issue 11, 1, variant).

The flag is written True and read back in the same action: the second free happens in the
concrete semantics, so every engine finds the double-free."""

from ownership import If, Request, Spec, action, per_request, pool


class DoubleFreeAfterWrite(Spec):
    requests = 1
    kv = pool(2)
    table = per_request(kv)
    again = per_request(bool, False)
    done = per_request(bool, False)

    @action
    def take(self, s, r: Request):
        s.require(~s.done[r])
        s.table[r] = s.alloc("kv", r, 1)
        s.done[r] = True

    @action
    def release(self, s, r: Request):
        s.require(s.done[r] & (s.table[r] != 0))
        s.again[r] = True
        s.free("kv", r, s.table[r])
        s.free("kv", r, If(s.again[r], s.table[r], 0))
        s.table[r] = 0
