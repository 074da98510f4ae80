"""A spec error: an action reads a slot that the spec never declared."""

from ownership import Request, Spec, action, per_request


class UnknownSlot(Spec):
    stage = per_request(bool, False)

    @action
    def go(self, s, r: Request):
        s.require(s.stag[r] == False)  # noqa: E712
        s.stage[r] = True
