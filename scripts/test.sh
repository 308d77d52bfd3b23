#!/usr/bin/env bash
# Everything CI checks: format, lints, all tests (unit, in-process DPDK, network
# namespaces), that the benchmarks compile, and every fuzz target for a few
# seconds on its corpus. Run as root (`make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_TERM_COLOR=never
# The property tests draw from one fixed seed here, so whether a change lands never
# depends on the draw; `make proptest` runs them longer from fresh seeds.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-1128}"
echo "== cargo fmt";    cargo fmt --all --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test";   cargo test --workspace --no-fail-fast
echo "== dpctl alone, without DPDK or libclang"
if cargo tree -p dpctl -e normal,build --prefix none | grep -E '^(dpdk-sys|bindgen|clang-sys) '; then
    echo "dpctl must not depend on DPDK"; exit 1
fi
PKG_CONFIG_LIBDIR=/nonexistent LIBCLANG_PATH=/nonexistent \
    cargo build -q -p dpctl --target-dir target/dpctl-alone
target/dpctl-alone/debug/dpctl --help >/dev/null
echo "== router-state alone, without DPDK"
if cargo tree -p router-state -e normal,build --prefix none | grep -E '^(dpdk-sys|bindgen|clang-sys) '; then
    echo "router-state must not depend on DPDK"; exit 1
fi
echo "== Debian package"; scripts/test-deb.sh
echo "== benches build"; cargo test --workspace --benches --no-run
echo "== fuzz, briefly"; scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
