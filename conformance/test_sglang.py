"""SGLang 0.5.23's real KV pool allocators against the allocator spec, on CPU.

PagedTokenToKVPoolAllocator and TokenToKVPoolAllocator: alloc, alloc_extend, alloc_decode,
free, free groups, both free-list orders; RadixCache over the paged allocator: match_prefix,
insert, inc_lock_ref / dec_lock_ref, evict. The double-free tests document real behaviour
(expected to fail the property, asserted as such): without SGLANG_DEBUG_MEMORY_POOL a double
free is accepted silently and the pool then reports more free tokens than it has; with it, a
double free is refused only while the page is still free, not once it was handed out again.
"""

from __future__ import annotations

import pytest

from ownership.bridges.testing import check_conformance, conformance

try:
    import sglang_adapters as sa
except ImportError as e:  # the engines live in .venv-conformance (conformance/setup.sh)
    pytest.skip(f"SGLang is not installed here ({e}); run conformance/setup.sh, then conformance/run.sh",
                allow_module_level=True)

if sa.VERSION != "0.5.23":
    pytest.skip(f"these adapters touch internals of sglang 0.5.23, not {sa.VERSION}", allow_module_level=True)

RUNS = {"runs": 150, "steps": 40}


def test_the_paged_allocator_reuses_freed_pages_first_exactly_as_the_spec_predicts():
    """need_sort=False: alloc, alloc_extend, alloc_decode and free hand out and take back the
    very pages the LIFO model predicts, page for page."""
    result = check_conformance(sa.SPEC, sa.PagedAllocatorAdapter, **RUNS)
    assert result.coverage.never_fired == ("free_group", "free_twice")
    assert result.coverage.runs == RUNS["runs"]


def test_the_paged_allocator_with_sorted_free_lists_conforms_up_to_renaming():
    """need_sort=True: freed pages are staged and sorted when an allocation runs short; the
    ownership still matches the model once pages are matched at allocation."""
    check_conformance(sa.SPEC, sa.SortedPagedAllocatorAdapter, match="renamed", **RUNS)


def test_free_groups_release_both_requests_pages_once():
    """free_group_begin / free_group_end: two requests' pages come back together, each once."""
    result = check_conformance(sa.SPEC, sa.PagedAllocatorAdapter, params={"groups": 1},
                               match="renamed", **RUNS)
    assert "free_group" not in result.coverage.never_fired


@pytest.mark.parametrize("adapter", ["TokenAllocatorAdapter", "SortedTokenAllocatorAdapter"])
def test_the_token_allocator_conforms_in_both_free_list_orders(adapter):
    """TokenToKVPoolAllocator (page_size 1): FIFO appends, or staged and sorted frees."""
    check_conformance(sa.SPEC, getattr(sa, adapter), params={"page_size": 1, "pages": 5},
                      match="renamed", **RUNS)


def test_the_radix_cache_shares_prefix_pages_and_evicts_only_unlocked_ones():
    """RadixCache over the real paged allocator: match_prefix, insert, inc/dec_lock_ref and
    evict keep the tree's and the requests' pages exactly as the model says (up to the
    allocator's page order), with prefix hits and evictions exercised."""
    sa.RadixCacheAdapter.hits = sa.RadixCacheAdapter.evicted = 0
    result = check_conformance(sa.RADIX_SPEC, sa.RadixCacheAdapter, match="renamed", **RUNS)
    assert result.coverage.never_fired == ()
    assert sa.RadixCacheAdapter.hits > 0 and sa.RadixCacheAdapter.evicted > 0


def test_the_paged_allocator_accepts_a_double_free_silently():
    """Real behaviour, documented: without SGLANG_DEBUG_MEMORY_POOL a second free of the same
    pages goes through; the page is then on the free list twice, and the pool reports more
    free tokens than it has. The harness reports it as double-free with a 3-step run."""
    result = conformance(sa.SPEC, sa.PagedAllocatorAdapter, params={"misuse": 1}, **RUNS)
    assert result.kind == "double-free"
    assert [s.action for s in result.trace.steps[1:]] == ["alloc", "free", "free_twice"]
    assert "on the implementation's free list twice" in result.report


def test_the_debug_memory_pool_refuses_a_double_free_only_while_the_page_is_free():
    """Real behaviour, documented: with SGLANG_DEBUG_MEMORY_POOL=1 a double free of pages that
    are still free is refused (an AssertionError after the pages were prepended), but once
    another request was given the page, the second free finds no duplicate on the free list
    and is accepted: the page is free and held at once."""
    result = conformance(sa.SPEC, sa.DebugPagedAllocatorAdapter, params={"misuse": 1}, **RUNS)
    assert result.kind == "double-free"
    steps = [s.action for s in result.trace.steps[1:]]
    assert steps[-1] == "free_twice" and len(steps) <= 5
    assert "is held by r2 and also free" in result.report
    assert result.refusals > 0, "some runs ended with the debug check refusing the double free"


def _serve_recorded(path, early_free: bool) -> None:
    """Two requests over the real paged allocator (page_size 4), as the scheduler runs them:
    alloc, forward (write), decode (read), free; the allocator's own calls are recorded by
    ownership.bridges.record, the forwards and decode steps by the test. With `early_free`, r1 gives
    its second page back before its decode step (the injected bug)."""
    from ownership.bridges.record import EventLog

    log = EventLog(path)
    allocator = sa.recorded_paged_allocator(8, 4, log, "decode")

    def pages(tokens) -> list[int]:
        return sorted({int(t) // 4 for t in tokens.tolist()})

    with log.acting("r1"):
        a = allocator.alloc(8)
    log.write("decode", "r1", pages(a))
    if early_free:
        with log.acting("r1"):
            allocator.free(a[4:])
    with log.acting("r2"):
        b = allocator.alloc(4)
    log.write("decode", "r2", pages(b))
    log.read("decode", "r1", pages(a))
    with log.acting("r1"):
        allocator.free(a[:4] if early_free else a)
    log.read("decode", "r2", pages(b))
    with log.acting("r2"):
        allocator.free(b)
    log.finish("decode", "r1")
    log.finish("decode", "r2")
    log.close()


def test_a_log_recorded_from_the_real_allocator_passes_the_monitor_and_an_early_free_fails_it(tmp_path):
    """ownership monitor over events recorded from SGLang's PagedTokenToKVPoolAllocator: the
    clean run holds every property; with r1's second page freed early, the real allocator
    hands that page to r2 (freed pages first) and r1's decode step reads it: read-unowned at
    line 6, the read (issue 15: the monitor finds an injected early free in a real log)."""
    import json

    clean, early = tmp_path / "clean.jsonl", tmp_path / "early.jsonl"
    _serve_recorded(clean, early_free=False)
    _serve_recorded(early, early_free=True)
    code, doc = _monitor(clean)
    assert code == 0, doc
    assert doc["coverage"]["by_event"]["alloc"] == 2
    code, doc = _monitor(early, "--out", str(tmp_path / "t.json"))
    assert code == 1, doc
    assert (doc["violation"]["property"], doc["violation"]["line"]) == ("read-unowned", 6)
    freed = json.loads(early.read_text().splitlines()[2])
    assert freed["event"] == "free" and freed["request"] == "r1"
    handed = json.loads(early.read_text().splitlines()[3])
    assert handed["event"] == "alloc" and handed["request"] == "r2" and handed["pages"] == freed["pages"]


def _monitor(path, *options: str):
    """`ownership monitor PATH --json OPTIONS...`: its exit code and its JSON object."""
    import json

    from click.testing import CliRunner

    from ownership.cli import cli

    run = CliRunner().invoke(cli, ["monitor", str(path), "--json", *options])
    return run.exit_code, json.loads(run.stdout)


def test_the_conformance_runs_record_a_log_that_passes_the_monitor(tmp_path):
    """Every run of the paged allocator's conformance check recorded from the real allocator
    (alloc, alloc_extend, alloc_decode, free), with the forwards and decode steps: the log
    holds every property."""
    from ownership.bridges.record import EventLog

    path = tmp_path / "runs.jsonl"
    sa.RecordingPagedAllocatorAdapter.log = EventLog(path)
    try:
        check_conformance(sa.SPEC, sa.RecordingPagedAllocatorAdapter, **RUNS)
    finally:
        sa.RecordingPagedAllocatorAdapter.log.close()
    code, doc = _monitor(path)
    assert code == 0, doc
    assert doc["coverage"]["by_event"]["alloc"] > 100 and doc["coverage"]["by_event"]["free"] > 50


def test_the_recorded_double_free_of_the_real_allocator_fails_the_monitor_at_its_line(tmp_path):
    """The documented double free (misuse=1) recorded from the real allocator: the monitor
    reports double-free at the line of the second free."""
    import json

    from ownership.bridges.record import EventLog

    path = tmp_path / "runs.jsonl"
    sa.RecordingPagedAllocatorAdapter.log = EventLog(path)
    try:
        result = conformance(sa.SPEC, sa.RecordingPagedAllocatorAdapter, params={"misuse": 1}, **RUNS)
    finally:
        sa.RecordingPagedAllocatorAdapter.log.close()
    assert result.kind == "double-free"
    code, doc = _monitor(path)
    assert code == 1 and doc["violation"]["property"] == "double-free"
    lines = path.read_text().splitlines()
    bad = json.loads(lines[doc["violation"]["line"] - 1])
    assert bad["event"] == "free"
    earlier = [json.loads(x) for x in lines[: doc["violation"]["line"] - 1]]
    assert any(e["event"] == "free" and e["node"] == bad["node"] and set(e["pages"]) & set(bad["pages"])
               for e in earlier)
