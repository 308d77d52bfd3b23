#!/usr/bin/env bash
# Runs every namespace and daemon test (BIRD, FRR, labs, churn, the kernel
# oracle) RUNS times each (default 20), one at a time, and reports passes per
# test; exits 1 if any test failed once. Logs of failed runs are kept in
# $STRESS_DIR (default a new directory under /tmp); ONLY (an extended regex)
# keeps the tests whose name matches. Run as root (`make stress`).
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-20}
dir=${STRESS_DIR:-$(mktemp -d /tmp/dp-stress.XXXXXX)}
mkdir -p "$dir"
export CARGO_TERM_COLOR=never
cargo build -p dpctl -q 2>&1 | tail -n 3
cargo test -p ctl --no-run -q 2>&1 | tail -n 3
failed=0
summary=()
for bin in linux netns lab churn oracle metrics workers; do
    # (the ignored ones are run by hand)
    ignored=$(cargo test -q -p ctl --test "$bin" -- --list --ignored 2>/dev/null | sed -n 's/: test$//p')
    names=$(cargo test -q -p ctl --test "$bin" -- --list 2>/dev/null | sed -n 's/: test$//p' |
        grep -vxF -e "${ignored:-//none//}" | grep -E -e "${ONLY:-.}")
    for t in $names; do
        pass=0
        for ((i = 1; i <= runs; i++)); do
            log="$dir/$bin.$t.$i.log"
            if cargo test -q -p ctl --test "$bin" -- --exact "$t" --test-threads=1 >"$log" 2>&1; then
                pass=$((pass + 1))
                rm -f "$log"
            else
                failed=1
            fi
        done
        line=$(printf '%-62s %3d/%d' "$bin::$t" "$pass" "$runs")
        echo "$line"
        summary+=("$line")
    done
done
echo "== stress: $runs runs per test (failed runs' logs in $dir)"
printf '%s\n' "${summary[@]}"
exit $failed
