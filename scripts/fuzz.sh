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
# make test's short smoke run); the default is -O.
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
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    new=$(mktemp -d)
    log=$(mktemp)
    if ! cargo +nightly fuzz run "$build" "$t" "$new" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=4096 -print_final_stats=1 > "$log" 2>&1; then
        tail -40 "$log"
        echo "fuzz: $t crashed; the input is in fuzz/artifacts/$t"
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $t: $runs runs in $secs s, no crash"
    if [ "$keep" = "--keep" ]; then
        cargo +nightly fuzz run "$build" "$t" "corpus/$t" "$new" -- -merge=1 > "$log" 2>&1
        echo "fuzz: $t: corpus $(ls "corpus/$t" | wc -l) inputs"
    fi
    rm -rf "$new" "$log"
done
