"""A spec that branches in Python on a parameter inside an action: fine at a concrete value,
refused when the parameter is left symbolic (tests/engines/test_bmc.py)."""

from ownership import Spec, action, ints, param, state


class Branchy(Spec):
    """Admit up to `limit` requests; the action branches on the parameter in Python."""

    limit = param(2, "how many may be admitted", minimum=1)

    admitted = state(ints(0, 4), 0)

    @action
    def admit(self, s):
        """Admit one more."""
        if self.limit > 1:  # Python control flow on a parameter: cannot be symbolic
            s.require(s.admitted < 2)
        s.admitted = s.admitted + 1
