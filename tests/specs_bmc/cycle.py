"""A correct protocol that runs forever: requests take a page, compute into it, read it and
give it back. Its executions are unbounded, so only k-induction proves it for every depth;
the lemma makes 1-induction succeed (tests/engines/test_bmc.py, docs/engines.md)."""

from enum import IntEnum

from ownership import If, Request, Spec, action, count, param, per_request, pool
from ownership.lang.declare import lemma


class St(IntEnum):
    IDLE = 0
    HOLDS = 1
    READ = 2


class Cycle(Spec):
    """Take, compute, read, give back; again and again."""

    pages = param(2, "pages in the pool", minimum=1)
    with_lemma = param(0, "1: the lemma tables_match_the_kernel holds; 2: a false one (for the tests); 0: none", minimum=0)
    node = pool(pages)

    stage = per_request(St, St.IDLE)
    table = per_request(node)

    @action
    def take(self, s, r: Request):
        """Reserve a page and compute KV into it."""
        s.require(s.stage[r] == St.IDLE)
        got = s.alloc("node", r, 1)
        s.write("node", r, got)
        s.table[r] = got
        s.stage[r] = St.HOLDS

    @action
    def use(self, s, r: Request):
        """Attend over the table."""
        s.require(s.stage[r] == St.HOLDS)
        s.read("node", r, s.table[r])
        s.stage[r] = St.READ

    @action
    def give_back(self, s, r: Request):
        """Free the page and clear the table."""
        s.require(s.stage[r] == St.READ)
        s.free("node", r, s.table[r])
        s.table[r] = 0
        s.stage[r] = St.IDLE

    @lemma
    def tables_match_the_kernel(self, s):
        """A request's table is exactly the pages it owns (one page while it holds any, none when
        idle), and no transfer of it is in flight (this protocol never transfers)."""
        if self.with_lemma == 0:  # a parameter: Python control flow on it is fine
            return True
        if self.with_lemma == 2:  # a wrong lemma: a request never holds a page
            return s.stage[1] == St.IDLE
        ok = True
        for r in range(1, self.requests + 1):
            mine = s.owned("node", r)
            ok = ok & (s.table[r] == mine) & If(s.stage[r] == St.IDLE, mine == 0, count(mine) == 1)
            ok = ok & ~s.in_flight(r)
        return ok
