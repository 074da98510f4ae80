"""A spec error: a Python `if` on a state value."""

from ownership import Request, Spec, action, per_request


class PythonIf(Spec):
    stage = per_request(bool, False)

    @action
    def go(self, s, r: Request):
        if s.stage[r]:
            s.stage[r] = False
        s.stage[r] = True
