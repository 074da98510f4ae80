#!/usr/bin/env bash
# Create .venv-conformance with the real engines, for the conformance suites in conformance/.
#
# sglang 0.5.23 and vllm 0.33.0 are installed without their dependencies (they pin CUDA
# builds); then the Python dependencies that importing their allocator, radix cache, block
# pool and KV cache manager needs go in ONE pip command together with torch==2.13.0, the
# CPU build this machine's pip finds (any other torch pulls a multi-GB CUDA build).
# torchvision is left out and stubbed (conformance/_stubs.py). The sglang 0.5.19 wheel (26 MB,
# for the incident's release: test_sglang_pd.py runs it in a subprocess, since it cannot be
# imported beside 0.5.23) is fetched with `pip download --no-deps` and unpacked, not installed,
# into $VENV/sglang-0.5.19. About 3 to 4 minutes and 3.7 GB (measured in a fresh clone's
# .ci/run, on a 2-core machine; the line at the end says how long it took).
#
# Idempotent: a venv whose marker file matches requirements.txt is kept as it is.
# Exit status: 0 when the venv is ready, 1 when the engines cannot be installed (run.sh then
# runs the suites without them, and every engine test is skipped with the reason). A 0.5.19
# wheel that cannot be fetched is not an error of the venv: its test skips with the reason.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${OWNERSHIP_CONFORMANCE_VENV:-$ROOT/.venv-conformance}"
REQS="$ROOT/conformance/requirements.txt"
ENGINES=(sglang==0.5.23 vllm==0.33.0 xgrammar==0.2.8)
MARKER="$VENV/.ownership-conformance"
WANT="$(cat "$REQS"; echo "${ENGINES[*]}")"
OLD_SGLANG="$VENV/sglang-0.5.19"   # the unpacked wheel; conformance/sglang_pd_release.py imports it

# pip's resolver lists every dependency of the engines that is left out on purpose (CUDA
# builds), and the index locations this machine does not have; that list is expected and
# long, so it is filtered. Errors still show.
quiet() {
    local out rc
    if out="$("$@" 2>&1)"; then rc=0; else rc=$?; fi
    grep -v -E "is ignored: it is neither|which is not installed|which is incompatible|dependency resolver|dependency conflicts" <<<"$out" || true
    return "$rc"
}

# Unpacked when missing: `pip download` of the wheel into a scratch directory, then unzip.
unpack_old_sglang() {
    [[ -f "$OLD_SGLANG/sglang/version.py" ]] && return 0
    local tmp
    tmp="$(mktemp -d)"
    if quiet "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps sglang==0.5.19 -d "$tmp" \
        && "$VENV/bin/python" -m zipfile -e "$tmp"/sglang-0.5.19-*.whl "$OLD_SGLANG.partial"; then
        mv "$OLD_SGLANG.partial" "$OLD_SGLANG"
        echo "sglang 0.5.19 unpacked in $OLD_SGLANG"
    else
        rm -rf "$OLD_SGLANG.partial"
        echo "conformance: cannot fetch the sglang 0.5.19 wheel; its test will be skipped" >&2
    fi
    rm -rf "$tmp"
}

if [[ -f "$MARKER" ]] && [[ "$(cat "$MARKER")" == "$WANT" ]] && "$VENV/bin/python" -c "import sglang, vllm, torch" 2>/dev/null; then
    unpack_old_sglang
    echo "conformance venv ready: $VENV"
    exit 0
fi

echo "creating the conformance venv in $VENV (about 3 to 4 minutes, 3.7 GB)"
SECONDS=0
rm -rf "$VENV"
python3 -m venv "$VENV"
PIP=("$VENV/bin/pip" install --quiet --disable-pip-version-check)

quiet_pip() {
    quiet "${PIP[@]}" "$@"
}

if ! quiet_pip --no-deps "${ENGINES[@]}"; then
    echo "conformance: cannot install ${ENGINES[*]} from the package registry" >&2
    exit 1
fi
if ! quiet_pip -r "$REQS"; then
    echo "conformance: cannot install the engines' dependencies (conformance/requirements.txt)" >&2
    exit 1
fi
quiet_pip --no-deps -e "$ROOT"
if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(0 if '+cpu' in torch.__version__ else 1)"; then
    echo "conformance: torch is not the CPU build ($("$VENV/bin/python" -c 'import torch; print(torch.__version__)'))" >&2
    exit 1
fi
unpack_old_sglang
echo "$WANT" > "$MARKER"
echo "conformance venv ready: $VENV ($(du -sh "$VENV" | cut -f1), made in ${SECONDS} s)"
