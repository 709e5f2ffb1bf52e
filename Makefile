# rtvirt - the commands a fresh machine needs:
#   make demo     set up, build, and run the main job on the embedded default scenario
#   make test     set up (Debian packages, Python venv, Rust deps), build, run every test (Rust,
#                 then the Python package's pytest suite: make test-python)
#   make install  install the rtvirt binary into ~/.cargo/bin (cargo install --path crates/cli)
CARGO ?= cargo
TEST_THREADS ?= 2
# Tests that need root or a tool fail instead of skipping (crates/testkit); 0 on a laptop.
RTVIRT_REQUIRE_ROOT ?= 1

.PHONY: demo test test-python build install setup setup-test bench clean

build:
	./scripts/setup.sh build
	$(CARGO) build --release --bin rtvirt

# After `make test` the demo reuses its build (target/debug, optimised dependencies) instead of
# compiling everything again in release mode; RELEASE=1 forces the release build.
demo:
	./scripts/setup.sh build
	@if [ -x target/debug/rtvirt ] && [ -z "$(RELEASE)" ]; then \
		echo "make demo: reusing the build of make test (target/debug/rtvirt; RELEASE=1 for a release build)"; \
		$(CARGO) build --bin rtvirt && ./target/debug/rtvirt demo; \
	else \
		$(CARGO) build --release --bin rtvirt && ./target/release/rtvirt demo; \
	fi

# Reuses target/ (the release build of `make build`), so nothing is compiled twice.
install:
	./scripts/setup.sh build
	$(CARGO) install --locked --path crates/cli --target-dir target

setup-test:
	./scripts/setup.sh test

test: setup-test
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) build --workspace --all-targets
	rm -f target/test-requirements.log
	RTVIRT_REQUIRE_ROOT=$(RTVIRT_REQUIRE_ROOT) RTVIRT_TEST_LOG=$(CURDIR)/target/test-requirements.log \
		$(CARGO) test --workspace -- --test-threads=$(TEST_THREADS)
	@echo "tests that needed root and ran: $$(cat target/test-requirements.log 2>/dev/null | grep -c '^ROOT: '); \
		skipped: $$(cat target/test-requirements.log 2>/dev/null | grep -c '^SKIPPED: ') (target/test-requirements.log)"
	$(MAKE) test-python

# The Python package (crates/python) built into .venv with maturin, then its pytest suite (real
# Ray cluster on this machine, side-by-side checks with the rtvirt binary of the same build).
test-python:
	VIRTUAL_ENV=$(CURDIR)/.venv .venv/bin/maturin develop --quiet -m crates/python/Cargo.toml
	RTVIRT_BIN=$(CURDIR)/target/debug/rtvirt .venv/bin/python -m pytest -q crates/python/tests

bench: build
	./scripts/bench.sh

clean:
	$(CARGO) clean
