"""A term nested thousands deep (NOTE(no-recursion) in ownership/interpret/batch.py): a loop of
3,000 additions. The batch engine's graph builder recursed down the chain and passed Python's
recursion limit (an internal error, exit 4). Every engine violates `below-3000` at step 1, as
the concrete interpreter does (tests/specs/semantics/deep_page_set.py: the same through a
page set)."""

from ownership import Spec, action, ints, invariant, state


class DeepSum(Spec):
    requests = 1
    done = state(ints(0, 1), 0)
    total = state(ints(0, 5000), 0)

    @action
    def add_up(self, s):
        s.require(s.done == 0)
        v = 0
        for _ in range(3000):
            v = v + s.done + 1
        s.total = v
        s.done = 1

    @invariant
    def below_3000(self, s):
        return s.total < 3000
