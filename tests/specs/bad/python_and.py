"""A spec error: Python `and` on state values."""

from ownership import Request, Spec, action, per_request


class PythonAnd(Spec):
    stage = per_request(bool, False)

    @action
    def go(self, s, r: Request):
        s.require(s.stage[1] and s.stage[2])
        s.stage[r] = True
