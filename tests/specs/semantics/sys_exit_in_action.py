"""A spec that calls sys.exit(0) in an action (issue 11, 2): a spec error, never a silent exit 0."""

import sys

from ownership import Spec, action, ints, state


class SysExitInAction(Spec):
    requests = 1
    x = state(ints(0, 1), 0)

    @action
    def go(self, s):
        sys.exit(0)
