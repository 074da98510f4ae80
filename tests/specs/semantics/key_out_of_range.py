"""A content key outside 1..K (issue 11, 6): a spec error in the state where it happens."""

from ownership import If, Request, Spec, action, ints, pool, state


class KeyOutOfRange(Spec):
    requests = 1
    kv = pool(1, keys=2)
    k = state(ints(0, 3), 1)

    @action
    def go(self, s, r: Request):
        got = s.alloc("kv", r, 1)
        s.write("kv", r, got, key=s.k)
        s.free("kv", r, got)
        s.k = If(s.k < 3, s.k + 1, 3)
