"""A spec with a known state count, a spec invariant, and sometimes properties.

Each of `requests` requests steps NEW -> RUNNING -> DONE independently: 3^requests states.
The invariant `at-most-limit-running` fails when more than `limit` run at once."""

from enum import IntEnum

from ownership import Request, Spec, action, invariant, param, per_request, sometimes


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2


class Counter(Spec):
    requests = param(2, "requests")
    limit = param(2, "how many requests may run at once")

    stage = per_request(Stage, Stage.NEW)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
        s.stage[r] = Stage.DONE

    @invariant
    def at_most_limit_running(self, s):
        """No more than `limit` requests run at once."""
        running = 0
        for r in range(1, self.requests + 1):
            running = running + (s.stage[r] == Stage.RUNNING)
        return running <= self.limit

    @sometimes
    def all_done(self, s):
        """Every request finishes."""
        done = True
        for r in range(1, self.requests + 1):
            done = done & (s.stage[r] == Stage.DONE)
        return done

    @sometimes
    def never(self, s):
        """Unreachable on purpose: a request is DONE before it started (vacuity warning)."""
        return (s.stage[1] == Stage.DONE) & (s.stage[1] == Stage.NEW)
