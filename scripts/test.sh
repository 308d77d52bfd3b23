#!/usr/bin/env bash
# Everything CI checks: format, lints, all tests (unit, in-process DPDK, network
# namespaces), that the benchmarks compile, and every fuzz target for a few
# seconds on its corpus. Run as root (`make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_TERM_COLOR=never
# Each stage's time, so that the suite's budget (15 minutes once set up) can be
# held to: printed as it ends and summed up at the end.
stage_name=setup stage_at=$SECONDS times=()
stage() {
    times+=("$(printf '%-34s %5d s' "$stage_name" $((SECONDS - stage_at)))")
    stage_name=$1 stage_at=$SECONDS
    echo "== $1"
}
trap 'stage end; printf "%s\n" "== stage times" "${times[@]}"' EXIT
# The property tests draw from one fixed seed here, so whether a change lands never
# depends on the draw; `make proptest` runs them longer from fresh seeds.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-1128}"
stage "cargo fmt";    cargo fmt --all --check
stage "cargo clippy"; cargo clippy --workspace --all-targets -- -D warnings
stage "cargo test";   cargo test --workspace --no-fail-fast
stage "dpctl alone, without DPDK or libclang"
# No crate under dpctl builds native code (no -sys crate, cc, pkg-config, bindgen
# or cmake), so it builds wherever Rust does; built here with DPDK and libclang
# hidden all the same (from the tests' build: only dpctl's own features differ).
if cargo tree -p dpctl -e normal,build --prefix none | grep -E '^([a-z0-9_-]+-sys|bindgen|cc|pkg-config|cmake) '; then
    echo "dpctl must not depend on native code (DPDK)"; exit 1
fi
PKG_CONFIG_LIBDIR=/nonexistent LIBCLANG_PATH=/nonexistent cargo build -q -p dpctl
target/debug/dpctl --help >/dev/null
stage "router-state alone, without DPDK"
if cargo tree -p router-state -e normal,build --prefix none | grep -E '^(dpdk-sys|bindgen|clang-sys) '; then
    echo "router-state must not depend on DPDK"; exit 1
fi
# The package is checked with the debug binaries the tests built (`make deb`
# builds the release one).
stage "Debian package"; DEB_PROFILE=dev scripts/test-deb.sh
stage "benches build"; cargo test --workspace --benches --no-run
# Every fuzz target on its corpus for a few seconds, built without optimisations
# (`make fuzz` builds them optimised and runs them long).
stage "fuzz, briefly"; FUZZ_BUILD=--dev scripts/fuzz.sh "${FUZZ_SECONDS:-3}"
