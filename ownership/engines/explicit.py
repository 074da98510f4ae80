"""The explicit engine, as `--engine explicit` names it: every reachable state, breadth first.

Which search runs a model: the compiled one with `--native` (ownership.engines.native), else
the batch interpreter's (ownership.engines.batch: numpy, a block of a level at a time, with
workers, symmetry and a memory guard of its own) whenever it runs the model, else the
per-state search (ownership.engines.per_state: the concrete interpreter, any pool size). Each
gives the same states, verdicts and shortest traces (tests/engines/test_batch.py,
test_native.py). The partitioned search across processes or a Ray cluster is started by the
API from ownership.engines.cluster.
"""

from __future__ import annotations

from ..errors import UsageError
from ..lang.model import Model
from ..limits import active as limits_active
from ..progress import Reporter
from ..result import CheckResult
from . import batch, per_state


def check(model: Model, *, native: bool = False, symmetry: bool = False, workers: int | None = None,
          max_memory: int | None = None, max_states: int | None = None, max_depth: int | None = None,
          max_seconds: float | None = None, reporter: Reporter | None = None) -> CheckResult:
    """Search every reachable state of `model` with the fastest search that runs it."""
    bounds = {"max_states": max_states, "max_depth": max_depth, "max_seconds": max_seconds, "reporter": reporter}
    if native:
        from . import native as compiled

        return compiled.check(model, **bounds, max_memory=max_memory, symmetry=symmetry)
    # The batch (numpy) search runs whenever the pools have at most 1,024 pages (over 63, page
    # sets in limbs: NOTE(wide-pages)); the per-state search covers larger pools.
    why_not = batch.supports(model)
    if why_not is None:
        return batch.check(model, **bounds, max_memory=max_memory, workers=workers or 1, symmetry=symmetry)
    if symmetry or (workers or 1) > 1 or (max_memory is not None and not limits_active()):
        # (the per-state search has no memory guard of its own: under a command's limits,
        # ownership.limits, the command's ceiling stands for --max-memory)
        raise UsageError(f"--symmetry, --workers and --max-memory need the batch engine, and {why_not}")
    return per_state.check(model, **bounds)
