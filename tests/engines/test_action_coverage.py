"""The actions' coverage of a complete exhaustive search (issue 33, item 3: TLC reports it):
the transitions of each action, the same in every explicit search, and an action enabled in
no reachable state named after the verdict."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from ownership.api import model_for
from ownership.engines import batch, native, per_state
from ownership.interpret.native_build import compiler

DEAD = '''
from enum import IntEnum

from ownership import Request, Spec, action, param, per_request


class Stage(IntEnum):
    NEW = 0
    RUNNING = 1
    DONE = 2


class Dead(Spec):
    """Each request runs NEW -> RUNNING -> DONE; `restart` wants a request both DONE and NEW."""

    requests = param(2, "requests")
    stage = per_request(Stage, Stage.NEW)

    @action
    def start(self, s, r: Request):
        s.require(s.stage[r] == Stage.NEW)
        s.stage[r] = Stage.RUNNING

    @action
    def finish(self, s, r: Request):
        s.require(s.stage[r] == Stage.RUNNING)
        s.stage[r] = Stage.DONE

    @action
    def restart(self, s, r: Request):
        s.require((s.stage[r] == Stage.DONE) & (s.stage[r] == Stage.NEW))
        s.stage[r] = Stage.NEW
'''


@pytest.fixture
def dead(tmp_path):
    path = tmp_path / "dead.py"
    path.write_text(DEAD, encoding="utf-8")
    return str(path)


def test_every_explicit_search_counts_the_same_transitions_per_action(dead):
    """Per state, numpy, numpy with workers and compiled: the same counts, which add up to the
    transitions; 3^2 states, each request's start and finish taken from 3 states of the other."""
    model = model_for(dead)
    want = (("start", 6), ("finish", 6), ("restart", 0))
    searches = {"per-state": per_state.check(model), "batch": batch.check(model),
                "workers": batch.check(model, workers=2)}
    if compiler() is not None:
        searches["native"] = native.check(model)
    for name, result in searches.items():
        assert result.coverage.actions == want, name
        assert sum(n for _, n in result.coverage.actions) == result.coverage.transitions, name
        assert result.coverage.never_enabled_actions() == ["restart"], name
    shipped = model_for("sglang_pd", fixes=["door-retire"])
    assert per_state.check(shipped).coverage.actions == batch.check(shipped).coverage.actions


def test_the_partitioned_search_counts_them_too_and_a_resumed_one_does_not(tmp_path, ray_cluster):
    """In this process, on Ray and with a checkpoint: the batch engine's counts; a run resumed
    from a checkpoint did not expand the levels before it, so it gives none."""
    from ownership.engines import partitioned
    from ownership.engines.cluster import Recipe

    model = model_for("sglang_pd", fixes=["door-retire"])
    want = batch.check(model).coverage.actions
    assert partitioned.check(model, parts=3).coverage.actions == want
    recipe = Recipe.of("sglang_pd", model)
    assert partitioned.check(model, recipe=recipe, ray=ray_cluster, parts=2).coverage.actions == want
    where = str(tmp_path / "ckpt")
    first = partitioned.check(model, recipe=recipe, checkpoint=where, max_depth=4)
    assert first.coverage.actions is None  # (stopped at a depth: incomplete)
    resumed = partitioned.check(model, recipe=recipe, resume=where)
    assert resumed.coverage.complete and resumed.coverage.actions is None
    assert partitioned.check(model, recipe=recipe, checkpoint=str(tmp_path / "whole")).coverage.actions == want


def test_an_incomplete_search_counts_no_coverage():
    """A search stopped by a limit has not seen every state: "never enabled" would claim more
    than it covered, so no counts are given."""
    model = model_for("sglang_pd", fixes=["door-retire"])
    assert per_state.check(model, max_states=50).coverage.actions is None
    assert batch.check(model, max_depth=3).coverage.actions is None


def test_the_report_names_an_action_never_enabled_and_json_gives_every_count(dead):
    shown = run_cli("check", dead)
    assert shown.code == 0
    assert "Never enabled in any reachable state: restart (a guard that never holds" in shown.out
    doc = json.loads(run_cli("check", dead, "--json").out)
    assert doc["coverage"]["actions"] == {"start": 6, "finish": 6, "restart": 0}
    fine = run_cli("check", "sglang_pd", "--fix", "door-retire")
    assert fine.code == 0 and "Never enabled" not in fine.out
