#!/usr/bin/env python3
"""Module cycles of any length in any crate are found by the tidy test
crates/testkit/tests/tidy/cycles.rs (part of `cargo test`, so of `make test`); this runs it alone."""
import subprocess
import sys

sys.exit(subprocess.call(["cargo", "test", "--workspace", "--test", "tidy", "--", "cycles"]))
