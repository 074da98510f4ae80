"""The PD handoff conformance run for one sglang release, in a process of its own (test_sglang_pd.py).

    PYTHONPATH=.venv-conformance/sglang-0.5.19:. .venv-conformance/bin/python \\
        conformance/sglang_pd_release.py LOG RUNS

0.5.19 cannot be imported beside 0.5.23, so it runs here, from the wheel setup.sh unpacks,
with the conformance venv's other packages. The run checks the real queues (PDAdapter)
against specs/sglang_pd.py with the release's fixes (its `releases` table), then drives the
shrunk run of a failure once more with every page event recorded into LOG
(RecordingPDAdapter), for `ownership monitor`. It prints one JSON object: the release, the
failure's kind and steps, the report, how the recorded replay ended, how many prompts the
prefill node rejected and how many of those it queued as the one-token placeholder.

0.5.19 pins transformers 5.12.1; the venv has 5.20, which already registers some model types
that 0.5.19 registers too (`'qwen3_asr' is already used by a Transformers config`), so
`AutoConfig.register` is called with exist_ok=True while sglang is imported.
"""

from __future__ import annotations

import json
import sys

import _stubs

_stubs.stub_torchvision()

from transformers import AutoConfig  # noqa: E402

_register = AutoConfig.register
AutoConfig.register = staticmethod(lambda model_type, config, exist_ok=False: _register(model_type, config,
                                                                                         exist_ok=True))

import sglang_pd_adapters as pa  # noqa: E402

from ownership.bridges.record import EventLog  # noqa: E402
from ownership.bridges.testing import conformance, replay_conformance  # noqa: E402
from specs.sglang_pd import SGLangPD  # noqa: E402


def main(log_path: str, runs: int) -> dict:
    fixes = SGLangPD.releases[pa.VERSION]
    result = conformance("sglang_pd", pa.PDAdapter, fixes=fixes, runs=runs, steps=12, profile="ci")
    doc = {"version": pa.VERSION, "fixes": fixes, "kind": result.kind, "report": result.report,
           "prefill_rejected": pa.PDAdapter.prefill_rejected, "placeholders": pa.PDAdapter.placeholders,
           "steps": [], "replay": None}
    if result.trace is not None:
        doc["steps"] = [step.label() for step in result.trace.steps[1:]]
        pa.RecordingPDAdapter.log = EventLog(log_path)
        pa.RecordingPDAdapter.single = True
        try:
            replay = replay_conformance(result.trace, "sglang_pd", pa.RecordingPDAdapter, fixes=fixes)
        finally:
            pa.RecordingPDAdapter.log.close()
        doc["replay"] = {"outcome": replay.outcome, "kind": replay.kind, "step": replay.step}
    return doc


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
