"""Ray that fails cleanly (issue 29): a search on Ray under the faults a user meets.

- a frozen worker (SIGSTOP) stops the search as `worker-unresponsive`, with the levels done.

Each Ray start costs seconds: the frozen worker runs on the session's local Ray
(tests/conftest.py).
"""

from __future__ import annotations

import os
import signal

from test_ray import shipped_model

from ownership.engines import partitioned
from ownership.engines.cluster import Recipe
from ownership.result import Verdict


def test_a_frozen_worker_is_worker_unresponsive_never_a_hang(ray_cluster, monkeypatch):
    """A partition stopped with SIGSTOP at depth 4 answers no ping: the search ends,
    inconclusive, `stopped by worker-unresponsive`, with the levels done (here after 3 s
    without an answer; 30 s by default). Issue 29: it waited for good (here until its own
    time limit, which this test sets far beyond, as a bound on a regression)."""
    monkeypatch.setattr(partitioned, "UNRESPONSIVE_SECONDS", 3.0)
    model = shipped_model("sglang_pd", ("door-retire",), params={"requests": 3})
    frozen: list[int] = []

    def freeze_a_worker(progress) -> None:
        if progress.depth == 4 and not frozen:
            from ray.util import list_named_actors

            name = sorted(n for n in list_named_actors() if n.startswith("ownership-"))[-1]
            actor = ray_cluster.get_actor(name)
            pid = ray_cluster.get(actor.__ray_call__.remote(lambda _self: os.getpid()))
            os.kill(pid, signal.SIGSTOP)
            frozen.append(pid)

    try:
        result = partitioned.check(model, recipe=Recipe.of("sglang_pd", model), ray=ray_cluster, parts=2,
                                   reporter=freeze_a_worker, report_every=0, max_seconds=120)
    finally:
        for pid in frozen:  # (its actor was killed by the search's end: it exits once it runs again)
            os.kill(pid, signal.SIGCONT)
    assert frozen
    cov = result.coverage
    assert result.verdict is Verdict.INCONCLUSIVE, cov.describe()
    assert cov.stopped_by == "worker-unresponsive" and not cov.complete, cov.describe()
    assert cov.bound_depth is not None and cov.bound_depth <= 4
    assert "stopped by worker-unresponsive" in cov.describe()
    assert "answered no ping for 3 s" in result.note
