#!/usr/bin/env bash
# Runs the cargo-fuzz targets (fuzz/fuzz_targets: packets, netlink, fpm, dpctl,
# config, request; all unless named) for SECONDS each (default 600) on its corpus
# in fuzz/corpus, with libFuzzer under the
# address sanitizer (nightly toolchain). New inputs go to a scratch folder; with
# `--keep` those that add coverage are merged into the corpus afterwards. Stops at
# the first crash (libFuzzer keeps the input under fuzz/artifacts/TARGET).
#
#   scripts/fuzz.sh [SECONDS] [--keep] [TARGET...]   (make fuzz: 600 s each, --keep)
#
# FUZZ_BUILD=--dev builds the targets without optimisations (half the build time:
# make test's short smoke run); the default is -O. FUZZ_JOBS targets run at once
# (default: the CPUs).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-600}
keep=${2:-}
shift $(( $# < 2 ? $# : 2 ))
command -v cargo-fuzz > /dev/null || { echo "fuzz: cargo-fuzz missing: run scripts/setup.sh"; exit 1; }
build=${FUZZ_BUILD:--O}
cargo +nightly fuzz build "$build"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
# One target's run: its result line, or its log's tail and a non-zero status on a
# crash; with `--keep`, its new coverage merged into the corpus.
run_one() {
    local t=$1 new log runs
    mkdir -p "corpus/$t"
    new=$(mktemp -d)
    log=$(mktemp)
    if ! cargo +nightly fuzz run "$build" "$t" "$new" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=4096 -print_final_stats=1 > "$log" 2>&1; then
        tail -40 "$log"
        echo "fuzz: $t crashed; the input is in fuzz/artifacts/$t"
        rm -rf "$new" "$log"
        return 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $t: $runs runs in $secs s, no crash"
    if [ "$keep" = "--keep" ]; then
        cargo +nightly fuzz run "$build" "$t" "corpus/$t" "$new" -- -merge=1 > "$log" 2>&1
        echo "fuzz: $t: corpus $(ls "corpus/$t" | wc -l) inputs"
    fi
    rm -rf "$new" "$log"
}
# As many targets at once as there are CPUs (FUZZ_JOBS), each printing when it
# ends; after a crash no other starts, those running end by their time.
jobs=${FUZZ_JOBS:-$(nproc)}
running=0
failed=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
    [ "$failed" = 0 ] || break
    run_one "$t" &
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
exit "$failed"
