"""A spec where only r1 can raise an error (issue 11, 7): not symmetric, so --symmetry refuses it."""

from ownership import Request, Spec, action, ints, per_request


class ErrorOnlyForR1(Spec):
    requests = 2
    x = per_request(ints(0, 2), 1)

    @action
    def go(self, s, r: Request):
        s.require(s.x[r] > 0)
        s.x[r] = s.x[r] - 1
        if r == 1:
            s.x[r] = 6 // s.x[r] - 6
