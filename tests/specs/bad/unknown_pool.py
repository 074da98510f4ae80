from ownership import Request, Spec, action, pool


class UnknownPool(Spec):
    requests = 1
    decode = pool(2)

    @action
    def go(self, s, r: Request):
        s.alloc("decod", r, 1)
