"""A page set indexed as a Python list (issue 31, item 8): refused, naming nth, first and has."""

from ownership import Request, Spec, action, per_request, pool


class IndexAPageSet(Spec):
    requests = 1
    kv = pool(2)
    table = per_request(kv)

    @action
    def go(self, s, r: Request):
        pages = s.alloc("kv", r, 2)
        s.free("kv", r, pages[0])
