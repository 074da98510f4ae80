"""A page outside its pool (issue 11, 6): `page(1)` into a 1-page pool was dropped without a
word and the spec verified; now it is a spec error where it happens (1 step), in every engine."""

from ownership import Request, Spec, action, ints, page, pool, state


class PageOutsidePool(Spec):
    requests = 1
    kv = pool(1)
    decode = pool(1)
    x = state(ints(0, 1), 0)

    @action
    def go(self, s, r: Request):
        s.require(s.x == 0)
        s.x = 1
        got = s.alloc("kv", r, 1)
        s.send(r, "kv", got, "decode", page(s.x))
