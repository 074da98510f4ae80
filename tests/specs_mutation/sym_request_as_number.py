"""Pins: symmetry is refused, with the reason (and the slot), for a spec that uses a request id
as a number.

`how` chooses the misuse: 0, the invariant orders the request id held in `last`
(`s.last <= 1`); 1, an action stores it into an int slot (`s.count = s.last`); 2, an action
compares an int slot with it (`s.count == s.last`); 3, it compares it with a sum
(`s.last != s.count + 1`); 4, it orders an int slot against it (`s.count <= s.last`); 5, it indexes a per-page
slot with it (`s.flag[s.last]`); 6, it stores a choice between the constants r1 and r2
(`If(s.count == 0, 1, 2)`), which names requests. Renaming the requests does not preserve
any of them, and the check says why, naming the state position and its slot.
"""

from ownership import If, Request, Spec, action, ints, invariant, param, per_page, pool, state
from ownership.lang.declare import RequestDomain


class SymRequestAsNumber(Spec):
    requests = param(2, "requests")
    how = param(0, "0: ordered, 1: stored as a number, 2: compared with a number slot, 3: with a sum, 4: ordered against a slot, 5: an index, 6: If of constants")

    last = state(RequestDomain(none="nobody"), 0)
    count = state(ints(0, 3), 0)
    kv = pool(3)
    flag = per_page(kv, bool, False)

    @action
    def finish(self, s, r: Request):
        if self.how == 1:
            s.count = s.last
        if self.how == 2:
            s.require(s.count != s.last)
        if self.how == 3:
            s.require(s.last != s.count + 1)
        if self.how == 4:
            s.require(s.count <= s.last)
        if self.how == 5:
            s.require(~s.flag[s.last])
        s.last = r
        if self.how == 6:
            s.last = If(s.count == 0, 1, 2)

    @invariant
    def low_last(self, s):
        return (s.last <= 1) if self.how == 0 else True
