"""An int page number stored into a page-set slot (issue 11, 6): refused, write page(p)."""

from ownership import Request, Spec, action, array, ints, pool


class IntIntoPageSlot(Spec):
    requests = 1
    kv = pool(2)
    index = array(ints(1, 2), kv)

    @action
    def go(self, s, r: Request, k: ints(1, 2)):
        s.index[k] = k - 1
