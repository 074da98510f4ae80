"""vLLM 0.33.0's real KVCacheManager and BlockPool against the shipped spec vllm_block_pool, on CPU.

Allocation, prefix-cache hits (touch), frees in reverse order, and eviction of cached blocks
from the front of the free queue, checked block for block against the model, which predicts
the free queue's order. The spec with fix evict-drops-hash is vLLM's behaviour since #4764.
"""

from __future__ import annotations

import pytest

from ownership.bridges.testing import check_conformance

try:
    import vllm_adapters as va
except ImportError as e:  # the engines live in .venv-conformance (conformance/setup.sh)
    pytest.skip(f"vLLM is not installed here ({e}); run conformance/setup.sh, then conformance/run.sh",
                allow_module_level=True)

if va.VERSION != "0.33.0":
    pytest.skip(f"this adapter touches internals of vllm 0.33.0, not {va.VERSION}", allow_module_level=True)

RUNS = {"runs": 150, "steps": 30}


@pytest.mark.parametrize("params", [{}, {"requests": 4, "blocks": 3, "prefixes": 2}],
                         ids=["3-requests-2-blocks", "4-requests-3-blocks"])
def test_the_kv_cache_manager_hands_out_exactly_the_blocks_the_spec_predicts(params):
    """Every block allocated, hit, freed and evicted matches the model block for block, and the
    runs exercised prefix-cache hits and evictions in the real manager."""
    va.KVCacheManagerAdapter.hits = va.KVCacheManagerAdapter.evictions = 0
    result = check_conformance("vllm_block_pool", va.KVCacheManagerAdapter, params=params,
                               fixes=["evict-drops-hash"], **RUNS)
    assert result.coverage.never_fired == ()
    assert va.KVCacheManagerAdapter.hits > 0 and va.KVCacheManagerAdapter.evictions > 0



def test_the_recorded_block_pool_passes_the_monitor_over_hits_and_evictions(tmp_path):
    """The real BlockPool recorded (ownership.bridges.record: alloc, touch as share, free) while the
    conformance runs drive it: with evict-drops-hash (vLLM since #4764) the log holds every
    property, over prefix-cache hits and evictions; the runs agree with the model too."""
    import json

    from click.testing import CliRunner

    from ownership.bridges.record import EventLog
    from ownership.cli import cli

    path = tmp_path / "runs.jsonl"
    va.RecordingKVCacheManagerAdapter.log = EventLog(path)
    va.RecordingKVCacheManagerAdapter.hits = va.RecordingKVCacheManagerAdapter.evictions = 0
    try:
        check_conformance("vllm_block_pool", va.RecordingKVCacheManagerAdapter, fixes=["evict-drops-hash"], **RUNS)
    finally:
        va.RecordingKVCacheManagerAdapter.log.close()
    assert va.RecordingKVCacheManagerAdapter.hits > 0 and va.RecordingKVCacheManagerAdapter.evictions > 0
    run = CliRunner().invoke(cli, ["monitor", str(path), "--json"])
    doc = json.loads(run.stdout)
    assert run.exit_code == 0, doc
    assert doc["coverage"]["by_event"]["share"] > 0 and doc["coverage"]["by_event"]["alloc"] > 0
