"""An int where a page set is meant (issue 11, 6): `s.free("kv", r, 1)` once freed page 0 (the
int read as a bitmask); now it is refused at its line: a page set is `page(p)`, `0` or a set."""

from ownership import Request, Spec, action, per_request, pool


class IntAsPages(Spec):
    requests = 1
    kv = pool(2)
    table = per_request(kv)

    @action
    def go(self, s, r: Request):
        s.table[r] = s.alloc("kv", r, 1)
        s.free("kv", r, 1)
