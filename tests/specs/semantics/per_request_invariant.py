"""An invariant of each request, `(self, s, r)` (issue 13, item 6): it must hold for every request,
and its violation names the requests it fails for.

r2 may take one page and r1 two: `bounded` fails for r2 alone, at depth 2. With the fix
`tight` r1's bound is 1 too, and the shortest violation is r1's (take(r1) twice comes first
in breadth-first order). `within-bound` is a lemma of each request, which `prove` proves."""

from ownership import Request, Spec, action, fix, ints, invariant, lemma, per_request


class PerRequestInvariant(Spec):
    requests = 2
    taken = per_request(ints(0, 3), 0)
    tight = fix("r1 may take one page, like r2")

    @action
    def take(self, s, r: Request):
        s.require(s.taken[r] < 3)
        s.taken[r] = s.taken[r] + 1

    @invariant
    def bounded(self, s, r):
        """A request takes at most its bound of pages."""
        bound = 1 if (r == 2 or self.tight) else 2
        return s.taken[r] <= bound

    @lemma
    def within_bound(self, s, r):
        return s.taken[r] <= 3
