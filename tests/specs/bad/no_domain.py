"""A spec error: an action argument without a domain."""

from ownership import Spec, action, per_request


class NoDomain(Spec):
    stage = per_request(bool, False)

    @action
    def go(self, s, r):
        s.stage[r] = True
