# Entry points. `make lab` and `make test` work on a fresh Debian bookworm machine as
# root: both run scripts/setup.sh first (packages, hugepages).
.PHONY: setup build man deb lab lab-frr lab-vpn lab-xconnect test proptest fuzz soak stress bench bench-io instructions clean

setup:
	scripts/setup.sh

build: setup
	cargo build --release -p ctl -p dpctl

# man pages (section 8) and bash/zsh completions of both binaries, in target/man
man: build
	mkdir -p target/man
	for b in dataplaned dpctl; do \
	    target/release/$$b --man > target/man/$$b.8 && \
	    target/release/$$b --completions bash > target/man/$$b.bash && \
	    target/release/$$b --completions zsh > target/man/_$$b || exit 1; \
	done

# the Debian package, in target/debian (release build)
deb: setup
	scripts/deb.sh

lab: build
	scripts/lab.sh

lab-frr: build
	scripts/lab-frr.sh

lab-vpn: build
	scripts/lab-vpn.sh

lab-xconnect: build
	scripts/lab-xconnect.sh

test:
	scripts/test.sh

# every property test (named prop_*) with PROPTEST_CASES (default 4096) cases from a
# fresh seed each run (make test uses a fixed one); a failure prints its seed
proptest: setup
	PROPTEST_CASES=$${PROPTEST_CASES:-4096} cargo test --release --workspace --lib --tests -- prop_

# every fuzz target for FUZZ_SECONDS (default 600) each; new coverage kept in fuzz/corpus
fuzz: setup
	scripts/fuzz.sh $${FUZZ_SECONDS:-600} --keep

# the full table churning under traffic for SOAK_SECONDS (default 600), then ORACLE_STEPS
# (default 5000) random kernel events checked against the kernel, then every distinct-result
# table (the 2024 one and 1.2 M synthetic prefixes); release mode
soak: setup
	cargo build --release -p dpctl
	CHURN_SECS=$${SOAK_SECONDS:-600} cargo test --release -p ctl --test churn -- --nocapture
	ORACLE_STEPS=$${ORACLE_STEPS:-5000} cargo test --release -p ctl --test oracle -- --nocapture
	DISTINCT_ALL=1 cargo test --release -p fib --test distinct

# every namespace/daemon test RUNS (default 20) times, passes per test
stress: setup
	scripts/stress.sh

# criterion benches (cycles/packet, LPM) and the I/O harness against dpdk-testpmd.
bench: build
	scripts/bench-io.py
	scripts/bench-linux.py
	cargo bench -p benches

bench-io: build
	scripts/bench-io.py

# instructions per packet of every pipeline case (callgrind; independent of load)
instructions: setup
	scripts/instructions.sh

clean:
	cargo clean
