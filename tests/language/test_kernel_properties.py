"""Each built-in property of the ownership kernel is caught by a small spec that violates it,
and the same spec with its fix is verified: the properties can fail, and can hold."""

from __future__ import annotations

import pytest
from conftest import spec_path

from ownership import Verdict, check, model_for
from ownership.interpret.concrete import Concrete
from ownership.kernel import PROPERTIES
from ownership.trace import build_trace

#: (spec file, property it violates, shortest counterexample length, the fix, states with the fix)
CASES = [
    ("stale_read.py", "stale-read", 2, "write-first", 4),
    ("read_unowned.py", "read-unowned", 3, "forget-on-free", 4),
    ("write_unowned.py", "write-unowned", 3, "abort-notifies-sender", 18),
    ("free_in_flight.py", "free-in-flight", 2, "hold-until-landed", 4),
    ("double_free.py", "double-free", 3, "release-once", 4),
    ("leak.py", "leak", 2, "free-on-abort", 4),
    ("semantics/crash_after_abort.py", "crash", 3, "ignore-abort-after-finish", 3),
    ("semantics/evict_pinned.py", "free-pinned", 3, "evict-only-unlocked", 10),
    ("semantics/release_twice_counted.py", "count-below-zero", 3, "release-at-terminal-state", 4),
]


def test_every_kernel_property_has_a_violating_spec():
    """The zoo covers every built-in property of the kernel (ownership.kernel.PROPERTIES)."""
    assert sorted(c[1] for c in CASES) == sorted(PROPERTIES)


@pytest.mark.parametrize(("spec", "prop", "length", "fix", "states"), CASES)
def test_the_spec_violates_its_property_with_a_shortest_trace(spec, prop, length, fix, states):
    """Without the fix the checker reports the property, at the pinned shortest length."""
    result = check(spec_path(spec))
    assert result.verdict is Verdict.VIOLATED
    assert result.violation.property == prop
    assert result.violation.step == length
    assert len(result.trace.steps) == length + 1
    assert "r1" in result.violation.requests or prop == "free-pinned" and result.violation.requests == ["r2"]


@pytest.mark.parametrize(("spec", "prop", "length", "fix", "states"), CASES)
def test_the_fix_removes_the_violation_in_every_reachable_state(spec, prop, length, fix, states):
    """With the fix the whole reachable state space is explored and nothing is violated."""
    result = check(spec_path(spec), fixes=[fix])
    assert result.verdict is Verdict.VERIFIED
    assert result.coverage.complete
    assert result.coverage.states == states


def test_a_stale_read_of_another_requests_data_is_named_a_cross_request_leak():
    """The message says whose data was read: here the warm pool's earlier request r0."""
    result = check("sglang_pd")
    assert result.violation.property == "stale-read"
    assert "cross-request leak" in result.violation.message
    assert "r0" in result.violation.message


def test_a_stale_read_of_never_written_data_is_not_called_a_leak():
    """Garbage that nobody wrote is a stale read, but not another request's data."""
    result = check(spec_path("stale_read.py"))
    assert "never written" in result.violation.message
    assert "cross-request" not in result.violation.message


def test_a_write_into_a_reused_page_names_the_request_whose_kv_is_overwritten():
    """write-unowned on a page that another request took names that request."""
    model = model_for(spec_path("write_unowned.py"))
    run = Concrete(model)
    labels = ["reserve(r=r1)", "abort(r=r1)", "reserve(r=r2)", "sender_writes(r=r1)"]
    by_label = {b.label(): b for b in model.bindings}
    states, bindings, flags = [model.initial], [], []
    for label in labels:
        out = run.step(states[-1], by_label[label])
        states.append(out.state)
        bindings.append(by_label[label])
        flags = out.flags
    reused = build_trace(model, states, bindings, flags, engine="test").violation
    assert reused.property == "write-unowned"
    assert "owned by r2" in reused.message
    assert "the KV of r2 is overwritten" in reused.message

    free_page = check(spec_path("write_unowned.py"))
    assert free_page.violation.property == "write-unowned"
    assert "(free)" in free_page.violation.message
    assert "freed meanwhile" in free_page.violation.message


def test_leak_is_not_checked_when_a_spec_defines_no_finished():
    """A spec without finished() gets no leak verdict, and the report says so."""
    result = check(spec_path("stale_read.py"), fixes=["write-first"])
    assert not result.model.checks_leak


def test_a_write_into_a_page_never_held_does_not_say_it_was_freed():
    """write-unowned says "freed meanwhile" only when the writer gave the page up in the trace;
    a page it never held is said so (the shortest run: r1 writes the free page at step 1)."""
    result = check("tests/specs_messages/write_never_held.py")
    assert result.violation.property == "write-unowned" and len(result.trace.steps) == 2
    assert result.violation.message == (
        "step 1, scribble(r=r1): request r1 wrote kv page 0 (free), which it does not own:"
        " it never held the page (a write into a page it was never given).")


def test_the_language_imports_neither_the_kernel_nor_an_interpreter():
    """docs/adr/0005: the kernel stands on the language, so lang/ never imports it (nor the
    interpreters or engines above it), not even inside a function."""
    import ast
    from pathlib import Path

    import ownership.lang

    for path in Path(ownership.lang.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:  # from ownership's top level
                names = [node.module] if node.module else [a.name for a in node.names]
                assert all(n.split(".")[0] == "errors" for n in names), (path.name, names)


def test_every_kernel_operation_is_a_method_of_the_state_and_a_reserved_name():
    """A slot may not take the name of a kernel operation, and every one is on `s`."""
    from ownership.kernel import KernelOperations
    from ownership.lang.properties import OPERATIONS

    methods = {n for n in vars(KernelOperations) if not n.startswith("_")}
    assert methods == set(OPERATIONS)


def test_a_property_broken_in_two_pools_at_once_names_each_pool_with_its_pages():
    """write-unowned in two pools of different sizes in one step: a clause per pool (once,
    the large pool's page was looked up in the small pool's state: an internal error)."""
    result = check("tests/specs_messages/write_two_pools.py")
    assert result.violation.property == "write-unowned"
    assert result.violation.message == (
        "step 1, scribble(r=r1): request r1 wrote small page 0 (free), which it does not own:"
        " it never held the page (a write into a page it was never given); and request r1 wrote"
        " large page 2 (free), which it does not own: it never held the page (a write into a"
        " page it was never given).")
