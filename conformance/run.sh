#!/usr/bin/env bash
# Run the conformance suites against the real engines (SGLang 0.5.23, vLLM 0.33.0) on CPU.
#
# Creates or reuses .venv-conformance (conformance/setup.sh) and runs every suite in ONE pytest
# process there (each cold engine import costs 10-13 s). When the engines cannot be installed,
# the suites still run, with the project's own Python, and every engine test is skipped with
# the reason (-rs prints it): a missing engine never passes silently. Extra arguments go to
# pytest, e.g. `bash conformance/run.sh --ownership-runs 500 -k sglang`.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${OWNERSHIP_CONFORMANCE_VENV:-$ROOT/.venv-conformance}"
cd "$ROOT"

if bash conformance/setup.sh; then
    PYTHON="$VENV/bin/python"
else
    echo "conformance: the engines could not be installed; their tests will be reported as skipped" >&2
    PYTHON="${PYTHON:-python3}"
fi
exec "$PYTHON" -m pytest -c conformance/pytest.ini --rootdir conformance -p no:cacheprovider conformance "$@"
