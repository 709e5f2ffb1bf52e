# rtvirt - the two commands a fresh machine needs:
#   make demo   set up, build, and run the main job on the embedded default scenario
#   make test   set up (Debian packages, Python venv, Rust deps), build, run every test
CARGO ?= cargo
TEST_THREADS ?= 2

.PHONY: demo test build setup setup-test bench clean

build:
	./scripts/setup.sh build
	$(CARGO) build --release --bin rtvirt

demo: build
	./target/release/rtvirt demo

setup-test:
	./scripts/setup.sh test

test: setup-test
	python3 scripts/module-cycles.py
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) build --workspace --all-targets
	$(CARGO) test --workspace -- --test-threads=$(TEST_THREADS)

bench: build
	./scripts/bench.sh

clean:
	$(CARGO) clean
