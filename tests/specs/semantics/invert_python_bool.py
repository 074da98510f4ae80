"""`~` on a Python bool literal (issue 11, 4): Python computes ~True == -2 before ownership
sees it, and an integer is refused where a condition is needed, at load, in every engine."""

from ownership import If, Spec, action, ints, state


class InvertPythonBool(Spec):
    requests = 1
    x = state(ints(0, 3), 0)

    @action
    def go(self, s):
        s.x = If(~True, 1, 2)
