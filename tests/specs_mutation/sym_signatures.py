"""Pins: the requests' signatures that order the canonical search read each request's own
columns of every per-request slot.

The canonical form (ownership/engines/symmetry.py, Canonicaliser) tries only the orderings of
the requests that sort their signatures, a signature packing a request's values of the
per-request slots. That is sound only if renaming a state renames its signatures: a mutant
that reads another request's column (`off - r`, `r`) gives two renamings of one state two
representatives. Here a scalar slot comes first (so no per-request slot starts at column 0),
and four per-request slots of different widths follow (one with a domain from 1), so that the columns of different
requests and slots differ. Every action treats the requests alike: the spec is symmetric.
"""

from ownership import Request, Spec, action, ints, param, per_request, state


class SymSignatures(Spec):
    requests = param(3, "requests")

    clock = state(ints(0, 2), 0)
    size = per_request(ints(0, 3), 0)
    level = per_request(ints(1, 3), 1)  # lo = 1: the signature subtracts it
    tries = per_request(ints(0, 1), 0)
    done = per_request(bool, False)

    @action
    def grow(self, s, r: Request):
        """A request's prompt grows by a page, and the clock ticks."""
        s.require((s.size[r] < 3) & ~s.done[r])
        s.size[r] = s.size[r] + 1
        s.clock = (s.clock + 1) % 3

    @action
    def retry(self, s, r: Request):
        s.require((s.tries[r] == 0) & (s.size[r] > 0))
        s.tries[r] = 1
        s.size[r] = s.size[r] - 1

    @action
    def finish(self, s, r: Request):
        s.require(s.size[r] >= 2)
        s.done[r] = True

    @action
    def climb(self, s, r: Request):
        s.require((s.level[r] < 3) & s.done[r])
        s.level[r] = s.level[r] + 1
