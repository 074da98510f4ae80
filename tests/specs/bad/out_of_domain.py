"""A spec error: an action writes a value outside its slot's domain."""

from ownership import Request, Spec, action, ints, per_request


class OutOfDomain(Spec):
    count = per_request(ints(0, 2), 0)

    @action
    def bump(self, s, r: Request):
        s.count[r] = s.count[r] + 1
