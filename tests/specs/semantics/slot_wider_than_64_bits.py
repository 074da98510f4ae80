"""A slot whose domain passes int64 (NOTE(int64-exact)): no arithmetic on it, so the batch
engine's check of intermediates let it in, and packing it overflowed (an internal error).
Every slot's domain is checked now."""

from ownership import Spec, action, ints, invariant, param, pool, state


class WideSlot(Spec):
    requests = param(1, "requests")
    kv = pool(1)
    x = state(ints(0, 2 ** 64), 2 ** 64)
    done = state(bool, False)

    @action
    def go(self, s):
        s.require(~s.done)
        s.done = True

    @invariant
    def not_done(self, s):
        """go never runs (it runs at once)."""
        return ~s.done
