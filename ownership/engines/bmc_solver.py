"""The symbolic engine's solver: one incremental z3 solver with a deadline, and how a search
stops (an `unknown`, a timeout or Ctrl-C is inconclusive, never a pass).

The lowest layer of ownership.engines.bmc: the unrolling, the induction step and the lassos
ask their queries through `Solver.sat`; `Stopping` turns what stops a search into its reason;
`interruptible` lets Ctrl-C cancel a z3 call from another thread (NOTE(cancel-in-c)). z3 is
imported only when a solver is made.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from .. import limits


class Stop(Exception):
    """A query came back unknown, time ran out or the user pressed Ctrl-C: inconclusive."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Solver:
    """One incremental z3 solver with a deadline; `unknown` raises Stop, never passes."""

    def __init__(self, deadline: float | None, counter: list[int]) -> None:
        import z3

        self.z3 = z3
        self.solver = z3.SolverFor("QF_BV")
        # NOTE(sat-phase): the SAT solver under QF_BV tries false first for every decision.
        # The unrolling's choices are mostly conditions that a step does NOT take (a binding
        # is not the one chosen, a page is not in a set), so this finds the refutations of the
        # deep queries faster: sglang_pd at 3 requests and 6 decode pages, depth 11 in about
        # 0.8 of the CPU time of z3's default phase caching (python benchmarks/bmc.py --orders).
        # A heuristic only: the answers are the same.
        self.solver.set("sat.phase", "always_false")
        self.deadline = deadline
        self.counter = counter
        self.model: Any = None

    def add(self, *constraints: Any) -> None:
        self.solver.add(*constraints)

    def sat(self, *extra: Any) -> bool:
        """Whether the assertions (and `extra`, for this query only) are satisfiable."""
        z3 = self.z3
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise Stop("max-seconds")
            self.solver.set("timeout", max(1, int(left * 1000)))
        self.counter[0] += 1
        if extra:
            self.solver.push()
            self.solver.add(*extra)
        try:
            r = self.solver.check()
            if r == z3.sat:
                self.model = self.solver.model()
        except z3.Z3Exception:
            if limits.cancelled():  # NOTE(cancel-in-c): Ctrl-C cut the query short
                raise Stop("interrupt") from None
            raise
        finally:
            if extra:
                self.solver.pop()
        if limits.cancelled():  # (an answer of a cancelled query is no answer)
            raise Stop("interrupt")
        if r == z3.sat:
            return True
        if r == z3.unsat:
            return False
        reason = self.solver.reason_unknown()
        if self.deadline is not None and time.monotonic() >= self.deadline - 0.01:
            raise Stop("max-seconds")
        if reason in ("interrupted from keyboard", "canceled"):
            raise Stop("interrupt")
        raise Stop(f"solver unknown ({reason})")


def cut_short(e: BaseException) -> bool:
    """Whether `e` is z3's answer to a call that Ctrl-C cancelled (NOTE(cancel-in-c)): an
    interrupted simplifier can leave a formula the solver then refuses ("not supported, apply
    simplifier"), a model can be missing. An interrupt, not a bug of ownership."""
    return type(e).__name__ == "Z3Exception" and limits.cancelled()


class Stopping:
    """Why a search stopped: `reason` is what the search sets inside (`max-depth`, ...), or,
    leaving it by a Stop, by Ctrl-C or by z3's answer to a call Ctrl-C cancelled, what stopped
    it (the search's result then says inconclusive). Any other error passes."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def __enter__(self) -> Stopping:
        return self

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> bool:
        if isinstance(e, Stop):
            self.reason = e.reason
            return True
        if isinstance(e, KeyboardInterrupt) or (isinstance(e, Exception) and cut_short(e)):
            self.reason = "interrupt"
            return True
        return False


@contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C reaches Python in every z3 call, and stops a long one at once (NOTE(cancel-in-c)
    in ownership/limits.py): z3's own SIGINT handler is off inside (it took the signal, and
    code that reads an unknown answer as "maybe", as the footprints do, went on), and z3's
    interrupt is called from another thread instead."""
    import z3

    z3.set_param("ctrl_c", False)
    try:
        with limits.cancelled_at_interrupt(z3.main_ctx().interrupt):
            yield
    finally:
        z3.set_param("ctrl_c", True)



__all__ = ["Solver", "Stop", "Stopping", "cut_short", "interruptible"]
