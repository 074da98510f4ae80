"""SGLang's real prefill/decode handoff on CPU beside specs/sglang_pd.py: 0.5.23 conforms, 0.5.19 leaks.

The real disaggregation queues of one prefill and one decode node (sglang_pd_nodes.py, fake
transfer backend) are driven through each action of the shipped spec, with the release's
fixes from the spec's `releases` table, and every page event is recorded for `ownership
monitor`. 0.5.23 (#36988 and #38935 in): its runs match the model page for page and their log
holds every property. 0.5.19: the incident, from SGLang's own code (its validate_input_length,
set_finish_with_abort, bootstrap queue and send_kv_chunk): the placeholder sends one page into
three reserved ones, the conformance run reports stale-read at decode's commit, and the
monitor reports it at the line of decode's read. 0.5.19 runs in a subprocess from the wheel
that setup.sh unpacks (sglang_pd_release.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ownership.bridges.record import EventLog
from ownership.bridges.testing import check_conformance

try:
    import sglang_pd_adapters as pa
except ImportError as e:  # the engines live in .venv-conformance (conformance/setup.sh)
    pytest.skip(f"SGLang is not installed here ({e}); run conformance/setup.sh, then conformance/run.sh",
                allow_module_level=True)

if pa.VERSION != "0.5.23":
    pytest.skip(f"these adapters are run in process for sglang 0.5.23, not {pa.VERSION}", allow_module_level=True)

from specs.sglang_pd import SGLangPD  # noqa: E402

HERE = Path(__file__).resolve().parent
OLD_SGLANG = Path(sys.prefix) / "sglang-0.5.19"  # unpacked by setup.sh
INCIDENT = ["arrive(r=r1, n=3)", "decode_prealloc(r=r1)", "prefill_forward(r=r1)", "prefill_result(r=r1)",
            "transfer_done(r=r1)", "decode_commit(r=r1)"]


def _monitor(path, *options: str):
    """`ownership monitor PATH --json OPTIONS...`: its exit code and its JSON object."""
    from click.testing import CliRunner

    from ownership.cli import cli

    run = CliRunner().invoke(cli, ["monitor", str(path), "--json", *options])
    return run.exit_code, json.loads(run.stdout)


@pytest.fixture(scope="module")
def recorded_0523(tmp_path_factory):
    """300 conformance runs of 0.5.23 at the spec's defaults, every page event recorded."""
    path = tmp_path_factory.mktemp("pd") / "runs.jsonl"
    pa.PDAdapter.reset()
    pa.RecordingPDAdapter.log = EventLog(path)
    try:
        result = check_conformance("sglang_pd", pa.RecordingPDAdapter, fixes=SGLangPD.releases["0.5.23"],
                                   runs=300, steps=30)
    finally:
        pa.RecordingPDAdapter.log.close()
    counts = {k: getattr(pa.PDAdapter, k) for k in ("prefill_rejected", "decode_rejected", "placeholders", "aborted")}
    return result, counts, path


def test_0_5_23_conforms_to_the_spec_with_its_release_fixes(recorded_0523):
    """Every action fires, and long prompts are rejected on prefill: the door retires them
    (no placeholder enters the bootstrap queue), decode preallocates for them and, once its
    receiver fails, aborts and frees its pages; the real pages match the model's exactly."""
    result, counts, _ = recorded_0523
    assert result.coverage.runs == 300
    assert result.coverage.never_fired == ()
    assert counts["prefill_rejected"] > 0 and counts["placeholders"] == 0
    assert counts["aborted"] > 0


def test_0_5_23_recorded_handoff_passes_the_monitor(recorded_0523):
    """The log of those runs, from the real allocators and the real sender and receiver
    (paired by bootstrap room), holds every property: no stale read, leak or early free."""
    _, _, path = recorded_0523
    code, doc = _monitor(path)
    assert code == 0, doc
    seen = doc["coverage"]["by_event"]
    assert min(seen[k] for k in ("alloc", "write", "send", "land", "read", "free", "finish")) > 100, seen


def test_0_5_23_decode_rejects_at_its_own_door_when_its_pool_is_the_smaller():
    """decode_pool=2 < prefill_pool=3: decode's DecodePreallocQueue.add retires the prompt
    prefill admitted (is_unadmitted_reject), and the runs still conform."""
    pa.PDAdapter.reset()
    result = check_conformance("sglang_pd", pa.PDAdapter, params={"prefill_pool": 3, "decode_pool": 2},
                               fixes=SGLangPD.releases["0.5.23"], runs=100, steps=30)
    assert pa.PDAdapter.decode_rejected > 0 and pa.PDAdapter.prefill_rejected == 0
    assert "decode_commit" not in result.coverage.never_fired


def test_0_5_23_retires_the_incidents_prompt_on_prefill_and_releases_it_on_decode():
    """The incident's request on 0.5.23, step by step: prefill's validate_input_length
    rejects 3 pages, and PrefillBootstrapQueue.add retires it at the door (HTTP 400, no
    sender, no page, no metadata slot); decode admits it and reserves 3 pages; prefill never
    sends, so decode's receiver fails (Mooncake: the waiting timeout) and pop_transferred
    aborts it and frees all 3."""
    from sglang.srt.managers.schedule_batch import FINISH_ABORT

    adapter = pa.PDAdapter({"context": 3, "prefill_pool": 2, "decode_pool": 4})
    adapter.arrive(1, 3)
    p, d = adapter.on_prefill[1], adapter.on_decode[1]
    assert isinstance(p.finished_reason, FINISH_ABORT) and p.finished_reason.status_code == 400
    assert p.disagg_kv_sender is None and p.metadata_buffer_index < 0 and p not in adapter.prefill.queue.queue
    adapter.decode_prealloc(1)
    assert adapter.decode.pages(d) == [1, 2, 3]
    adapter.decode_timeout(1)
    assert isinstance(d.finished_reason, FINISH_ABORT) and not d.kv.holds_kv
    assert sorted(adapter.decode.free_pages()) == [1, 2, 3, 4]
    assert adapter.prefill.free_pages() == [1, 2, 3]


def test_0_5_19_leaks_stale_kv_from_its_own_code(tmp_path):
    """0.5.19 (no door, no retire after the forward): the placeholder is bootstrapped,
    prefilled and sent; the conformance run fails with stale-read at decode_commit after
    exactly the incident's 6 steps, and in the recorded log prefill sends 1 page, decode
    reserved and reads 3, and the monitor reports stale-read at that read."""
    if not (OLD_SGLANG / "sglang" / "version.py").is_file():
        pytest.skip(f"sglang 0.5.19 is not unpacked in {OLD_SGLANG}; run conformance/setup.sh")
    log = tmp_path / "incident.jsonl"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(OLD_SGLANG), str(HERE.parent)]))
    run = subprocess.run([sys.executable, str(HERE / "sglang_pd_release.py"), str(log), "100"], env=env,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads(run.stdout.splitlines()[-1])
    assert doc["version"] == "0.5.19" and doc["fixes"] == []
    assert doc["kind"] == "stale-read", doc["report"]
    assert doc["steps"] == INCIDENT
    assert doc["placeholders"] > 0
    assert doc["replay"] == {"outcome": "failed", "kind": "stale-read", "step": 6}

    events = [json.loads(line) for line in log.read_text().splitlines()]
    sent = [e for e in events if e["event"] == "send"]
    read = [i for i, e in enumerate(events, start=1) if e["event"] == "read"]
    assert [e["pages"] for e in sent] == [[1]] and sent[0]["to_pages"] == [1]
    assert events[read[0] - 1]["pages"] == [1, 2, 3]
    code, out = _monitor(log)
    assert code == 1, out
    assert out["violation"]["property"] == "stale-read"
    assert out["violation"]["line"] == read[0]
    assert "decode pages 2, 3, never written" in out["violation"]["message"]
