#!/usr/bin/env bash
# Set-up for the benchmark suite (benchmarks/run.py): SPIN 6.5.x, the peer model checker,
# from Debian's `spin` package, and a C compiler for SPIN's generated verifier.
# Idempotent; needs root (as on the project's machines) or sudo.
set -euo pipefail
need=()
command -v spin >/dev/null 2>&1 || need+=(spin)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
spin -V
gcc --version | head -1
