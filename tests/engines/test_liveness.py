"""Liveness: @eventually, @leads_to, the kernel's eventually-released, and fairness.

The explicit engine finds a fair behaviour on which a property fails (a lasso, or a run that
stops in a dead end) on the reachable graph; the lasso round-trips through ITF and replays;
engines that cannot check liveness refuse it instead of passing it unchecked. The engine's
search for fair cycles is compared with an independent oracle on random graphs: it
enumerates every set of states instead of decomposing into components."""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import run_cli, spec_path
from hypothesis import given, settings
from hypothesis import strategies as st

from ownership.engines import liveness
from ownership.engines.liveness import Instance
from ownership.engines.reachable import Graph
from ownership.trace import read_itf

RETRY = spec_path("liveness/retry.py")
STRANDED = spec_path("liveness/stranded.py")


def test_a_lost_notice_retried_forever_is_a_lasso_without_fairness_of_done():
    r = run_cli("check", f"{RETRY}:Retry")
    assert r.code == 1, r.out + r.err
    assert "violated: a-wait-ends" in r.out
    assert "a-wait-ends for request r1: its p holds at step 1 and its q never holds after" in r.out
    assert "Counterexample: a lasso of 3 steps, whose steps 2..3 repeat forever:" in r.out
    assert "step 3 is back at the state of step 1" in r.out
    assert "assuming weak fairness of lose, resend (for each of their bindings)" in r.out


def test_weak_fairness_of_done_does_not_end_the_wait_and_strong_fairness_does():
    """done is disabled while the notice is lost: weakly fair, it may still never run."""
    weak = run_cli("check", f"{RETRY}:RetryWeak", "--json")
    doc = json.loads(weak.out)
    assert weak.code == 1 and doc["violation"]["property"] == "a-wait-ends"
    assert doc["steps"] == ["start(r=r1)", "lose(r=r1)", "resend(r=r1)"] and doc["loop"] == 1
    assert doc["violation"]["lasso"] == {"length": 3, "loop": 1}  # (issue 31: the lasso's shape in the violation)
    assert doc["liveness"] == {"a-wait-ends": "violated"}
    strong = run_cli("check", f"{RETRY}:RetryStrong")
    assert strong.code == 0, strong.out + strong.err
    assert "verified: no violation in all 4 reachable states" in strong.out
    assert "Liveness a-wait-ends: holds on every behaviour" in strong.out
    assert "strong fairness of done" in strong.out


def test_pages_held_for_a_request_prefill_retired_come_back_only_through_the_timeout():
    ok = run_cli("check", STRANDED)
    assert ok.code == 0, ok.out + ok.err
    assert "Liveness every-request-leaves: holds on every behaviour" in ok.out
    assert "Liveness eventually-released: holds on every behaviour" in ok.out
    assert "no action is fair" in ok.out
    bad = run_cli("check", STRANDED, "--fix", "no-timeout")
    assert bad.code == 1
    assert "Counterexample: a behaviour of 2 steps that then stops (no action is enabled at step 2)" in bad.out
    pages = run_cli("check", STRANDED, "--fix", "no-timeout", "--skip", "every-request-leaves",
                    "--skip", "retired-pages-return", "--json")
    doc = json.loads(pages.out)
    assert doc["violation"]["property"] == "eventually-released"
    assert doc["violation"]["pages"] == [{"pool": "decode", "page": 0}]
    assert doc["violation"]["step"] == 1 and doc["loop"] == 2
    assert doc["violation"]["lasso"] == {"length": 2, "loop": 2}  # (it stops at step 2)
    assert "decode page 0 is owned at step 1 and never free after" in doc["violation"]["message"]


def test_a_lasso_round_trips_through_itf_and_replays_only_where_it_is_still_fair(tmp_path):
    out = tmp_path / "l.json"
    run_cli("check", f"{RETRY}:RetryWeak", "--out", str(out))
    doc = json.loads(out.read_text())
    assert doc["loop"] == 1 and doc["#meta"]["ownership"]["loop"] == 1
    trace = read_itf(str(out))
    assert trace.loop == 1 and trace.violation.property == "a-wait-ends"
    again = run_cli("replay", str(out), "--spec", f"{RETRY}:RetryWeak")
    assert again.code == 1 and "still violated" in again.out
    # under strong fairness of done the same loop is not a behaviour: it no longer violates
    fair = run_cli("replay", str(out), "--spec", f"{RETRY}:RetryStrong")
    assert fair.code == 0 and "no longer violates" in fair.out
    shown = run_cli("show", str(out), "--no-pager")
    assert "step 3 is the state of step 1: steps 2..3 repeat forever" in shown.out
    # a loop that points past the trace is bad input
    doc["#meta"]["ownership"]["loop"] = 9
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = run_cli("show", str(bad), "--no-pager")
    assert r.code == 2 and "#meta.ownership.loop" in r.err


def test_a_dead_end_replays_as_a_dead_end(tmp_path):
    out = tmp_path / "d.json"
    run_cli("check", STRANDED, "--fix", "no-timeout", "--out", str(out))
    assert run_cli("replay", str(out), "--spec", STRANDED).code == 1
    # with the timeout the last state is no dead end any more: the run does not stop there
    from ownership.api import replay_trace

    result, _ = replay_trace(read_itf(str(out)), spec=STRANDED, fixes=[])
    assert result.outcome == "passed"
    again, _ = replay_trace(read_itf(str(out)), spec=STRANDED, fixes=["no-timeout"])
    assert again.outcome == "violated" and again.violation.property == "every-request-leaves"


def test_engines_that_cannot_check_liveness_refuse_it_and_say_how_to_leave_it_out():
    r = run_cli("check", f"{RETRY}:RetryStrong", "--symmetry")
    assert r.code == 2 and "--symmetry is not sound for liveness yet" in r.err and "--skip a-wait-ends" in r.err
    proof = run_cli("prove", f"{RETRY}:RetryStrong", "--only", "a-wait-ends")
    assert proof.code == 2 and "nothing to prove: induction proves safety" in proof.err and "a-wait-ends" in proof.err
    symbolic = run_cli("check", f"{RETRY}:RetryStrong", "--engine", "bmc", "--symbolic", "requests=1..2")
    assert symbolic.code == 2 and "liveness with --symbolic parameters is not supported" in symbolic.err
    skipped = run_cli("check", f"{RETRY}:RetryStrong", "--symmetry", "--skip", "a-wait-ends")
    assert skipped.code == 0, skipped.out + skipped.err
    assert run_cli("prove", f"{RETRY}:RetryStrong", "--skip", "a-wait-ends").code == 0


def test_prove_proves_the_safety_part_of_a_spec_with_liveness_and_says_what_it_left_out():
    """prove on a spec with liveness was refused until a --skip per liveness property; it now
    proves the safety properties and names each liveness property it left to `check`."""
    proof = run_cli("prove", f"{RETRY}:RetryStrong")
    assert proof.code == 0, proof.out + proof.err
    assert "verified: proved by k-induction" in proof.out
    assert "Liveness a-wait-ends: not proved: induction proves safety; check it with `ownership check`" in proof.out
    doc = json.loads(run_cli("prove", f"{RETRY}:RetryStrong", "--json").out)
    assert doc["verdict"] == "verified" and list(doc["left_out"]) == ["a-wait-ends"], doc
    assert doc["reproduce"] == f"ownership prove {RETRY}:RetryStrong"
    broken = run_cli("prove", f"{RETRY}:Retry")  # (its safety part: the same proof; liveness is what fails)
    assert broken.code == 0 and "Liveness a-wait-ends: not proved" in broken.out


# --------------------------------------------------------------------------- bmc: lassos of bounded length


@pytest.mark.parametrize("name, steps, loop", [("Retry", 3, 1), ("RetryWeak", 3, 1)])
def test_bmc_finds_the_shortest_lasso_and_it_replays(tmp_path, name, steps, loop):
    out = tmp_path / "l.json"
    r = run_cli("check", f"{RETRY}:{name}", "--engine", "bmc", "--max-depth", "6", "--out", str(out))
    assert r.code == 1, r.out + r.err
    assert f"Counterexample: a lasso of {steps} steps, whose steps {loop + 1}..{steps} repeat forever:" in r.out
    assert "so this lasso is a shortest one" in r.out and "Liveness a-wait-ends: violated" in r.out
    trace = read_itf(str(out))
    assert trace.loop == loop and trace.violation.property == "a-wait-ends" and trace.engine == "bmc"
    explicit = run_cli("check", f"{RETRY}:{name}", "--json")
    assert len(json.loads(explicit.out)["steps"]) == steps  # the explicit engine's lasso is as long
    again = run_cli("replay", str(out), "--spec", f"{RETRY}:{name}")
    assert again.code == 1 and "still violated" in again.out


def test_bmc_under_strong_fairness_finds_no_lasso_and_says_how_far_it_looked():
    r = run_cli("check", f"{RETRY}:RetryStrong", "--engine", "bmc", "--max-depth", "5", "--json")
    doc = json.loads(r.out)
    assert r.code == 0 and doc["verdict"] == "bounded"
    assert doc["liveness"]["a-wait-ends"].startswith("no counterexample of at most 5 steps")
    assert "longer ones are not ruled out" in doc["liveness"]["a-wait-ends"]
    # a lasso needs 3 steps: with fewer, none exists even without fairness
    short = run_cli("check", f"{RETRY}:Retry", "--engine", "bmc", "--max-depth", "2", "--json")
    assert short.code == 0 and json.loads(short.out)["verdict"] == "bounded"


def test_bmc_finds_the_dead_end_and_the_late_response_and_covers_runs_that_all_stop(tmp_path):
    ok = run_cli("check", STRANDED, "--engine", "bmc", "--json")
    doc = json.loads(ok.out)
    assert ok.code == 0 and doc["verdict"] == "verified"  # every run stops within a few steps
    assert all(how.startswith("holds on every behaviour") for how in doc["liveness"].values()), doc["liveness"]
    dead = run_cli("check", STRANDED, "--engine", "bmc", "--fix", "no-timeout", "--json")
    explicit = run_cli("check", STRANDED, "--fix", "no-timeout", "--json")
    a, b = json.loads(dead.out), json.loads(explicit.out)
    assert dead.code == 1 and a["violation"]["property"] == b["violation"]["property"] == "every-request-leaves"
    assert a["steps"] == b["steps"] and a["loop"] == b["loop"] == 2
    out = tmp_path / "w.json"
    late = run_cli("check", STRANDED, "--engine", "bmc", "--param", "timeout_steps=0", "--out", str(out))
    assert late.code == 1 and "violated: retired-pages-return" in late.out
    assert read_itf(str(out)).loop is None
    assert run_cli("replay", str(out), "--spec", STRANDED).code == 1


def test_bmc_reports_a_spec_error_in_a_liveness_property_at_the_state_that_raises_it(tmp_path):
    body = ("    @action\n    def go(self, s, r: Request):\n        s.require(s.stage[r] == 0)\n"
            "        s.stage[r] = 1\n\n"
            "    @eventually\n    def done(self, s, r):\n        return 4 // (1 - s.stage[r]) == 4\n")
    spec = _spec(tmp_path, body)
    for engine in ("explicit", "bmc"):
        r = run_cli("check", spec, "--engine", engine)
        assert r.code == 2 and "s.py:16: in eventually done (r=r1): `//` by zero" in r.err, (engine, r.err)


def test_fuzz_finds_the_lasso_on_a_random_run_and_never_claims_a_property_holds():
    r = run_cli("check", f"{RETRY}:Retry", "--engine", "fuzz", "--runs", "20", "--seed", "1")
    assert r.code == 1 and "violated: a-wait-ends" in r.out, r.out + r.err
    assert "a lasso of 3 steps" in r.out and "a shorter counterexample may exist" in r.out
    ok = run_cli("check", f"{RETRY}:RetryStrong", "--engine", "fuzz", "--runs", "20", "--seed", "1")
    assert ok.code == 0 and "bounded" in ok.out
    assert "Liveness a-wait-ends: not violated in 20 random runs" in ok.out and "holds" not in ok.out


def test_a_bounded_safety_search_leaves_liveness_unchecked_and_says_so():
    r = run_cli("check", f"{RETRY}:Retry", "--max-states", "2")
    assert r.code == 0 and "bounded" in r.out
    assert "Liveness a-wait-ends: not checked: liveness needs every reachable state" in r.out


BAD_SPECS = {
    "a leads_to that returns one condition": (
        "    @leads_to\n    def p(self, s, r):\n        return s.stage[r] == 1\n",
        "must return a pair (p, q)"),
    "an unknown fairness": (
        "    @action(fair='sometimes')\n    def go(self, s, r: Request):\n        s.stage[r] = 1\n",
        "fair='sometimes'"),
    "a liveness property with two requests": (
        "    @eventually\n    def p(self, s, r, q):\n        return True\n", "must take (self, s) or (self, s, r)"),
    "an unknown kernel liveness": ("    liveness = ('eventually-freed',)\n", "not a liveness property of the kernel"),
    "a property named like the kernel's": (
        "    @eventually\n    def eventually_released(self, s):\n        return True\n",
        "has the name of the kernel's built-in property"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_a_malformed_liveness_declaration_is_a_spec_error_with_its_file(case, tmp_path):
    body, words = BAD_SPECS[case]
    path = tmp_path / "bad.py"
    path.write_text(
        "from ownership import Request, Spec, action, eventually, leads_to, param, per_request\n\n\n"
        "class Bad(Spec):\n    requests = param(1, 'requests')\n    stage = per_request(int_range := None) if False else None\n"
        .replace("    stage = per_request(int_range := None) if False else None\n", "")
        + "    from ownership import ints as _ints\n    stage = per_request(_ints(0, 1))\n\n"
        "    @action\n    def step(self, s, r: Request):\n        s.require(s.stage[r] == 0)\n        s.stage[r] = 1\n\n"
        + body)
    r = run_cli("check", str(path))
    assert r.code == 2, r.out + r.err
    assert words in r.err and str(path) in r.err and "Traceback" not in r.err


# --------------------------------------------------------------------------- against an oracle


def _oracle(graph: Graph, inst: Instance, fair: dict[int, str]) -> bool:
    """Whether a fair behaviour violates `inst`, by brute force: some p-state reaches, through
    not-q states, a not-q dead end, or a set S of not-q states that is strongly connected,
    has an edge inside, and on which every weakly fair binding enabled everywhere and every
    strongly fair binding enabled somewhere has an edge inside S."""
    n = len(graph.states)
    bad = [not q for q in inst.q]
    enabled = [{b for b, _ in out} for out in graph.succ]

    def reach(src: set[int], inside: set[int]) -> set[int]:
        seen, todo = set(src), list(src)
        while todo:
            i = todo.pop()
            for _, j in graph.succ[i]:
                if j in inside and j not in seen:
                    seen.add(j)
                    todo.append(j)
        return seen

    notq = {i for i in range(n) if bad[i]}
    targets = {i for i in notq if not graph.succ[i]}
    for size in range(1, len(notq) + 1):
        for subset in itertools.combinations(sorted(notq), size):
            s = set(subset)
            edges = [(i, b, j) for i in s for b, j in graph.succ[i] if j in s]
            if not edges or any(reach({i}, s) != s for i in s):
                continue
            inside = {b for _, b, _ in edges}
            ok = all(b in inside for b, f in fair.items()
                     if (f == "weak" and all(b in enabled[i] for i in s))
                     or (f == "strong" and any(b in enabled[i] for i in s)))
            if ok:
                targets |= s
    reachable = reach({0}, set(range(n)))
    for i in reachable:
        if inst.p[i] and bad[i] and reach({i}, notq) & targets:
            return True
    return False


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 6))
    k = draw(st.integers(1, 3))  # bindings
    succ = []
    for _ in range(n):
        out = draw(st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, n - 1)), max_size=4, unique_by=lambda e: e[0]))
        succ.append(sorted(out))
    # a BFS tree from state 0 (the engine reads shortest prefixes from it)
    parent, via = [-1] * n, [-1] * n
    seen, todo = {0}, [0]
    while todo:
        i = todo.pop(0)
        for b, j in succ[i]:
            if j not in seen:
                seen.add(j)
                parent[j], via[j] = i, b
                todo.append(j)
    keep = sorted(seen)  # only reachable states, renumbered in BFS order of discovery
    index = {s: t for t, s in enumerate(keep)}
    succ2 = [[(b, index[j]) for b, j in succ[i]] for i in keep]
    parent2 = [index[parent[i]] if parent[i] != -1 else -1 for i in keep]
    via2 = [via[i] for i in keep]
    m = len(keep)
    fair = draw(st.dictionaries(st.integers(0, k - 1), st.sampled_from(["weak", "strong"])))
    p = draw(st.lists(st.booleans(), min_size=m, max_size=m))
    q = draw(st.lists(st.booleans(), min_size=m, max_size=m))
    graph = Graph([(i,) for i in range(m)], succ2, parent2, via2)
    return graph, Instance("prop", "leads-to", p, q), fair


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_the_fair_cycle_search_agrees_with_an_oracle_that_tries_every_set_of_states(case):
    graph, inst, fair = case
    lasso = liveness.find_lasso(graph, inst, fair)
    assert (lasso is not None) == _oracle(graph, inst, fair)
    if lasso is None:
        return
    # the lasso is a real path of the graph, from the initial state, through a trigger
    assert lasso.states[0] == 0
    for a, b, x in zip(lasso.states, lasso.states[1:], lasso.bindings):
        assert (x, b) in graph.succ[a]
    assert inst.p[lasso.states[lasso.trigger]]
    tail = lasso.states[min(lasso.trigger, lasso.loop):]
    assert not any(inst.q[i] for i in tail)
    last = len(lasso.states) - 1
    if lasso.loop == last:
        assert not graph.succ[lasso.states[-1]]  # a dead end
    else:
        assert lasso.states[-1] == lasso.states[lasso.loop]
        cycle = lasso.states[lasso.loop:last]
        taken = set(lasso.bindings[lasso.loop:])
        enabled = [{b for b, _ in graph.succ[i]} for i in cycle]
        for b, f in fair.items():
            if f == "weak" and all(b in e for e in enabled):
                assert b in taken
            if f == "strong" and any(b in e for e in enabled):
                assert b in taken


# --------------------------------------------------------------------------- bounded response, measures


def test_a_bounded_response_fails_when_it_comes_later_than_its_bound_and_replays(tmp_path):
    """retired-pages-return: the timeout frees the pages 1 step after the retire."""
    ok = run_cli("check", STRANDED, "--json")
    assert json.loads(ok.out)["liveness"]["retired-pages-return"] == "holds on every behaviour"
    out = tmp_path / "w.json"
    late = run_cli("check", STRANDED, "--param", "timeout_steps=0", "--out", str(out))
    assert late.code == 1 and "violated: retired-pages-return" in late.out
    assert "q must hold within 0 steps: q does not hold at steps 2..2" in late.out
    assert "Counterexample: a run of 2 steps on which the response comes too late:" in late.out
    trace = read_itf(str(out))
    assert trace.loop is None and trace.violation.step == 2
    again = run_cli("replay", str(out), "--spec", STRANDED)
    assert again.code == 1 and "still violated" in again.out
    # without the timeout the run stops with the pages held: too late as well, at a dead end
    dead = run_cli("check", STRANDED, "--fix", "no-timeout", "--skip", "every-request-leaves",
                   "--skip", "eventually-released")
    assert "the run stops at step 2, where no action is enabled, with q still false" in dead.out


def test_a_measure_reports_its_largest_value_and_how_long_it_stays_above_zero():
    """stranded-pages: the 2 decode pages of a retired request, until the timeout frees them
    (1 state); without the timeout they stay forever."""
    r = run_cli("check", STRANDED, "--measure", "--json")
    doc = json.loads(r.out)
    assert doc["measures"] == {"stranded-pages": {"largest": 2, "at_depth": 2, "longest_positive": 1}}
    text = run_cli("check", STRANDED, "--measure").out
    assert "Measure stranded-pages: at most 2 (first reached in 2 steps); above 0 for at most 1 consecutive state" in text
    assert "Measure" not in run_cli("check", STRANDED).out  # only when asked: it builds the whole graph
    forever = json.loads(run_cli("check", STRANDED, "--fix", "no-timeout", "--skip", "every-request-leaves",
                                 "--skip", "eventually-released", "--skip", "retired-pages-return", "--measure",
                                 "--json").out)
    assert forever["measures"]["stranded-pages"]["longest_positive"] is None
    # not measured where not every reachable state was covered: null, and it says why
    bounded = json.loads(run_cli("check", STRANDED, "--max-states", "2", "--measure", "--json").out)
    assert bounded["measures"] == {"stranded-pages": None}
    assert bounded["measures_note"].startswith("not measured: measures need every reachable state")
    for other in (("--engine", "fuzz"), ("--engine", "bmc"), ("--symmetry",)):
        refused = run_cli("check", STRANDED, *other, "--measure")
        assert refused.code == 2 and "--measure needs the explicit engine" in refused.err
    none = run_cli("check", f"{RETRY}:Retry", "--measure")
    assert none.code == 2 and "declares no @measure" in none.err


def test_the_pd_spec_measures_what_the_timeout_costs_in_each_release():
    """specs/sglang_pd.py: 0.5.19 leaks (nothing to measure: a safety violation); 0.5.20
    retires after the forward without telling decode, whose pages wait for the timeout."""
    r = run_cli("check", "sglang_pd", "--release", "0.5.20", "--measure", "--json")
    doc = json.loads(r.out)
    assert doc["verdict"] == "verified"
    assert doc["measures"]["stranded-decode-pages"]["largest"] == 3
    bug = json.loads(run_cli("check", "sglang_pd", "--release", "0.5.19", "--measure", "--json").out)
    assert bug["verdict"] == "violated" and bug["measures"] == {"stranded-decode-pages": None}


def test_a_measure_that_is_not_a_number_is_a_spec_error(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(
        "from ownership import Request, Spec, action, ints, measure, param, per_request\n\n\n"
        "class M(Spec):\n    requests = param(1, 'requests')\n    stage = per_request(ints(0, 1))\n\n"
        "    @action\n    def step(self, s, r: Request):\n        s.require(s.stage[r] == 0)\n        s.stage[r] = 1\n\n"
        "    @measure\n    def m(self, s):\n        return s.stage[1] == 1\n")
    r = run_cli("check", str(path), "--measure")
    assert r.code == 2 and "measure m" in r.err and str(path) in r.err and "Traceback" not in r.err


def test_a_bound_that_is_not_a_number_of_steps_is_a_spec_error(tmp_path):
    path = tmp_path / "w.py"
    path.write_text(
        "from ownership import Spec, leads_to, param\n\n\n"
        "class W(Spec):\n    requests = param(1, 'requests')\n\n"
        "    @leads_to(within=-1)\n    def p(self, s):\n        return True, True\n")
    r = run_cli("check", str(path))
    assert r.code == 2 and "within=-1" in r.err and str(path) in r.err


@settings(max_examples=300, deadline=None)
@given(graphs(), st.integers(0, 4))
def test_the_bounded_response_search_agrees_with_every_path_tried(case, bound):
    """find_slow against all paths of bound steps from every reachable state."""
    graph, inst, _ = case

    def late(i: int, left: int) -> bool:  # bound+1 states without q from i, or a dead end before
        if inst.q[i]:
            return False
        if left == 0 or not graph.succ[i]:
            return True
        return any(late(j, left - 1) for _, j in graph.succ[i])

    expected = any(inst.p[i] and late(i, bound) for i in range(len(graph.states)))
    got = liveness.find_slow(graph, inst, bound)
    assert (got is not None) == expected
    if got is not None:
        tail = got.states[got.trigger:]
        assert inst.p[tail[0]] and not any(inst.q[i] for i in got.states[min(got.trigger, got.loop or got.trigger):])
        last = len(got.states) - 1
        if got.loop is not None and got.loop < last:  # bound >= states: a cycle without q, as a lasso
            assert bound >= len(graph.states) and got.states[-1] == got.states[got.loop]
        else:
            assert len(tail) == bound + 1 or not graph.succ[tail[-1]]


def test_check_spec_in_a_pytest_suite_checks_liveness_with_the_explicit_engine_and_warns_with_fuzz():
    from ownership.bridges.testing import SpecViolated, check_spec

    with pytest.raises(SpecViolated, match="violates a-wait-ends"):
        check_spec(f"{RETRY}:Retry", engine="explicit")
    result = check_spec(f"{RETRY}:RetryStrong", engine="explicit")
    assert result.liveness == {"a-wait-ends": "holds on every behaviour"}
    with pytest.warns(UserWarning, match="liveness a-wait-ends not checked on every behaviour by engine fuzz"):
        check_spec(f"{RETRY}:RetryStrong", engine="fuzz", runs=5, steps=5, seed=1, database=None)
    with pytest.raises(SpecViolated, match="violates a-wait-ends"):
        check_spec(f"{RETRY}:Retry", engine="fuzz", runs=20, steps=10, seed=1, database=None)


def _spec(tmp_path, body: str, name: str = "s.py") -> str:
    path = tmp_path / name
    path.write_text("from ownership import Request, Spec, action, eventually, ints, invariant, leads_to, param, per_request\n\n\n"
                    "class S(Spec):\n    requests = param(1, 'requests')\n    k = param(2, 'a bound')\n"
                    "    stage = per_request(ints(0, 2))\n\n" + body)
    return str(path)


def test_a_dead_end_at_the_initial_state_is_a_counterexample_of_no_steps_that_replays(tmp_path):
    spec = _spec(tmp_path, "    @eventually\n    def done(self, s, r):\n        return s.stage[r] == 2\n")
    out = tmp_path / "t.json"
    r = run_cli("check", spec, "--out", str(out))
    assert r.code == 1 and "the run stops at step 0" in r.out
    again = run_cli("replay", str(out), "--spec", spec)
    assert again.code == 1 and "still violated" in again.out


def test_a_bound_from_parameters_must_not_be_negative_and_a_large_one_is_quick(tmp_path):
    loop = ("    @action\n    def spin(self, s, r: Request):\n        s.stage[r] = 1\n\n")
    neg = _spec(tmp_path, loop + "    @leads_to(within=k - 5)\n    def w(self, s, r):\n        return True, s.stage[r] == 2\n", "n.py")
    r = run_cli("check", neg)
    assert r.code == 2 and "its bound, within, is -3" in r.err and "n.py" in r.err
    huge = _spec(tmp_path, loop + "    @leads_to(within=10 ** 9)\n    def w(self, s, r):\n        return True, s.stage[r] == 2\n", "h.py")
    r = run_cli("check", huge, "--json")
    doc = json.loads(r.out)
    assert r.code == 1 and doc["violation"]["property"] == "w" and len(doc["steps"]) < 5  # a lasso, not 10**9 steps


def test_fuzz_with_only_liveness_left_to_check_checks_it_and_everything_skipped_is_refused():
    skips = [w for p in ("stale-read", "read-unowned", "write-unowned", "free-in-flight", "double-free")
             for w in ("--skip", p)]
    r = run_cli("check", f"{RETRY}:Retry", "--engine", "fuzz", "--runs", "20", "--seed", "1", *skips)
    assert r.code == 1 and "violated: a-wait-ends" in r.out
    none = run_cli("check", f"{RETRY}:Retry", "--engine", "fuzz", *skips, "--skip", "a-wait-ends")
    assert none.code == 2 and "nothing to check" in none.err


def test_a_value_of_the_wrong_sort_names_the_propertys_own_line(tmp_path):
    spec = _spec(tmp_path, "    @invariant\n    def five(self, s):\n        return 5\n", "i.py")
    r = run_cli("check", spec)
    assert r.code == 2 and f"{spec}:" in r.err and "site-packages" not in r.err
    pair = _spec(tmp_path, "    @leads_to\n    def p(self, s, r):\n        return 'a', 'b'\n", "p.py")
    r = run_cli("check", pair)
    assert r.code == 2 and f"{pair}:" in r.err and "site-packages" not in r.err


def test_a_lasso_whose_loop_does_not_close_is_refused_when_read(tmp_path):
    out = tmp_path / "l.json"
    run_cli("check", f"{RETRY}:RetryWeak", "--out", str(out))
    doc = json.loads(out.read_text())
    doc["#meta"]["ownership"]["loop"] = 0  # step 3 is the state of step 1, not of step 0
    out.write_text(json.dumps(doc))
    for cmd in (("show", str(out), "--no-pager"), ("replay", str(out), "--spec", f"{RETRY}:RetryWeak")):
        r = run_cli(*cmd)
        assert r.code == 2 and "is not the state of step 0" in r.err


def test_mermaid_marks_the_loop_of_a_lasso_and_the_stop_of_a_dead_end(tmp_path):
    lasso, dead = tmp_path / "l.json", tmp_path / "d.json"
    run_cli("check", f"{RETRY}:Retry", "--out", str(lasso))
    run_cli("check", STRANDED, "--fix", "no-timeout", "--out", str(dead))
    shown = run_cli("show", str(lasso), "--mermaid")
    assert shown.code == 0 and "step 3 is the state of step 1: steps 2..3 repeat forever" in shown.out
    stops = run_cli("show", str(dead), "--mermaid")
    assert stops.code == 0 and "the run stops at step 2, no action enabled, and stays there forever" in stops.out


@pytest.mark.parametrize("ref, params", [
    ("sglang_pd", {}), ("vllm_nixl_pd", {}), ("vllm_block_pool", {}), ("vllm_nixl_load_failure", {"requests": 1}),
    pytest.param("sglang_disagg", {"prefill_pool": 1}, marks=pytest.mark.long),
    (f"{RETRY}:RetryStrong", {"requests": 2}), (STRANDED, {"requests": 2})])
def test_the_batch_built_graph_is_the_concrete_one_state_for_state_and_edge_for_edge(ref, params):
    """The reachable graph from the packed expander (the batch interpreter, blocks of 97 states
    here so that a level spans several) against the per-state one (the concrete interpreter)."""
    from ownership.api import model_for
    from ownership.engines import reachable

    model = model_for(ref, params=params)
    concrete, stopped = reachable.build(model, max_states=None, max_seconds=None, reporter=None,
                                        expander=reachable.PerState(model, block=5))
    packed = reachable.Packed.of(model, block=97)
    assert packed is not None
    batch, stopped_batch = reachable.build(model, max_states=None, max_seconds=None, reporter=None, expander=packed)
    assert stopped is None and stopped_batch is None
    assert len(batch.states) == len(concrete.states) > 3
    assert batch.states == concrete.states and batch.succ == concrete.succ
    assert (batch.parent, batch.via, batch.depth, batch.transitions) == (
        concrete.parent, concrete.via, concrete.depth, concrete.transitions)


SPIN = spec_path("liveness/spin.py")

#: The zoo of small liveness specs, each violated and fixed: (spec, fixes, params, violated).
ZOO = [
    (f"{RETRY}:Retry", [], {}, True), (f"{RETRY}:RetryWeak", [], {}, True), (f"{RETRY}:RetryStrong", [], {}, False),
    (f"{RETRY}:Retry", [], {"requests": 2}, True), (f"{RETRY}:RetryStrong", [], {"requests": 2}, False),
    (f"{SPIN}:Spin", [], {}, True), (f"{SPIN}:SpinWeak", [], {}, True),  # a-spin-ends holds, a-spin-ends-soon not
    (STRANDED, ["no-timeout"], {}, True), (STRANDED, [], {}, False),
    (STRANDED, [], {"timeout_steps": 0}, True), (STRANDED, [], {"requests": 2}, False),
]


@pytest.mark.parametrize(("ref", "fixes", "params", "violated"), ZOO)
def test_explicit_bmc_and_fuzz_agree_on_the_zoo(ref, fixes, params, violated):
    """The explicit engine's verdict is the zoo's; bmc, bounded by the explicit lasso's length
    (or 8 steps), finds a counterexample exactly where it does, never a longer one, and
    replays it; fuzz never finds a violation the explicit engine does not."""
    from ownership import check

    skip = ["every-request-leaves", "eventually-released"] if params.get("timeout_steps") == 0 else []
    if ref.endswith("SpinWeak"):
        assert check(ref, skip=["a-spin-ends-soon"]).liveness == {"a-spin-ends": "holds on every behaviour"}
    explicit = check(ref, fixes=fixes, params=params, skip=skip)
    assert (explicit.verdict.word == "violated") is violated
    steps = len(explicit.trace.steps) - 1 if violated else 8
    bmc = check(ref, fixes=fixes, params=params, skip=skip, engine="bmc", max_depth=steps)
    if violated:
        assert bmc.verdict.word == "violated" and bmc.trace.violation.property == explicit.trace.violation.property
        assert len(bmc.trace.steps) - 1 <= steps
        assert (bmc.trace.loop is None) == (explicit.trace.loop is None)
    else:
        assert bmc.verdict.word in ("bounded", "verified") and bmc.trace is None
    fuzz = check(ref, fixes=fixes, params=params, skip=skip, engine="fuzz", runs=30, seed=3)
    if not violated:
        assert fuzz.verdict.word == "bounded", fuzz.violation


def test_liveness_switched_on_from_the_command_line_fails_replays_and_is_repeated(tmp_path):
    """`--liveness eventually-released` on a spec that names none (tests/specs/leak.py: an abort
    keeps its page): a dead end with the page owned; the trace replays as that violation, and
    the reproduce command carries the option."""
    out = tmp_path / "t.json"
    run = run_cli("check", spec_path("leak.py"), "--skip", "leak", "--liveness", "eventually-released",
                  "--out", str(out))
    assert run.code == 1 and "violated: eventually-released" in run.out
    assert "--skip leak --liveness eventually-released" in run.out
    from ownership.api import replay_trace

    trace = read_itf(out)
    replayed, model = replay_trace(trace, spec=spec_path("leak.py"))
    assert "eventually-released" in model.liveness_checked()
    bad = run_cli("check", spec_path("leak.py"), "--liveness", "eventually-done")
    assert bad.code == 2 and "invalid value for '--liveness'" in bad.err and "Traceback" not in bad.err


def test_the_liveness_phase_reports_its_progress_and_its_time():
    """After the search, the reachable graph's phases (the graph, each obligation) report as
    they start, and the time the check reports includes theirs (a check with liveness ran
    12.5 s silent, then said "in 0.14 s": the search's time alone)."""
    from ownership.api import check

    seen = []
    result = check("sglang_pd", fixes=["door-retire"], liveness=["eventually-released"], reporter=seen.append)
    phases = [p.phase for p in seen if p.kind == "phase" and p.phase.startswith("liveness")]
    assert phases[0] == "liveness: building the reachable graph", phases
    pages = sum(info.size for info in result.model.pools.values())
    assert [p for p in phases if p.startswith("liveness: eventually-released")][-1].endswith(f"({pages} of {pages})")
    assert result.graph_seconds is not None and result.graph_seconds > 0
    assert result.took().startswith(f"in {result.coverage.seconds + result.graph_seconds:.2f} s (")
    shown = run_cli("check", "sglang_pd", "--fix", "door-retire", "--liveness", "eventually-released", "--json")
    doc = json.loads(shown.out)
    assert doc["graph_seconds"] > 0 and doc["liveness"] == {"eventually-released": "holds on every behaviour"}
    text = run_cli("check", "sglang_pd", "--fix", "door-retire", "--liveness", "eventually-released")
    assert "s the search, " in text.out and " s liveness and measures on its graph)" in text.out, text.out
    plain = run_cli("check", "sglang_pd", "--fix", "door-retire", "--json")
    assert "graph_seconds" not in json.loads(plain.out)
