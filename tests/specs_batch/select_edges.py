"""select() at an index read from the state, in range and out of it (below 0, past the end).

Native-engine test spec (NOTE(select-array) in ownership/interpret/native_source.py): `at` walks from
-2 to 5 over a list of four state values `level`, and `got` keeps what select read, or the
default 9 outside the list. The invariant fails where the default is read past the end (a
read below 0 is allowed, so the search reads there first); with the `in-range` fix the walk
stays inside the list, and the spec verifies."""

from ownership import If, Spec, action, array, fix, ints, invariant, select, state


class SelectEdges(Spec):
    requests = 1
    in_range = fix("keep the index inside the list")
    level = array(ints(0, 3), ints(0, 3), 0)
    at = state(ints(-2, 5), -2)
    got = state(ints(0, 9), 0)

    @action
    def bump(self, s, i: ints(0, 3)):
        s.require(s.level[i] < 3)
        s.level[i] = s.level[i] + 1

    @action
    def walk(self, s):
        lo = 0 if self.in_range else -2
        hi = 3 if self.in_range else 5
        s.require(s.at < hi)
        s.at = If(s.at < lo, lo, s.at + 1)
        s.got = select([s.level[i] for i in range(4)], s.at, 9)

    @invariant
    def read_inside(self, s):  # (the default read below 0 is allowed; past the end it is not)
        return (s.got != 9) | (s.at < 0)
