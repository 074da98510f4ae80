"""`finished()` that forgets `return` (issue 11, 5): a spec error at its line, in every engine."""

from ownership import Request, Spec, action, ints, per_request, pool


class FinishedWithoutReturn(Spec):
    requests = 1
    kv = pool(1)
    stage = per_request(ints(0, 1), 0)

    @action
    def go(self, s, r: Request):
        s.require(s.stage[r] == 0)
        s.stage[r] = 1

    def finished(self, s, r):
        s.stage[r] == 1  # noqa: B015 (the forgotten return is the point)
