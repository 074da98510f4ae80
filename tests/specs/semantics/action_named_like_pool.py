"""An action named like a pool (issue 11, 6) silently replaced the pool; now refused at load."""

from ownership import Request, Spec, action, pool


class ActionNamedLikePool(Spec):
    requests = 1
    prefill = pool(1)

    @action
    def prefill(self, s, r: Request):  # noqa: F811 (the clash is the point)
        s.alloc("prefill", r, 1)
