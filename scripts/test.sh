#!/usr/bin/env bash
# Everything CI checks: format, lints, all tests (unit, in-process DPDK, network
# namespaces), that the benchmarks compile, and every fuzz target for a few
# seconds on its corpus. Run as root (`make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_TERM_COLOR=never
echo "== cargo fmt";    cargo fmt --all --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test";   cargo test --workspace --no-fail-fast
echo "== benches build"; cargo test --workspace --benches --no-run
echo "== fuzz, briefly"; scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
