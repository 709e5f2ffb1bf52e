//! Peak memory of the real binary as `/usr/bin/time -v` reports it (Debian package `time`,
//! installed by scripts/setup.sh): the bound tests of commands given huge or hostile inputs.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Run `rtvirt args` under `/usr/bin/time -v`: its output and its peak resident set in KiB.
pub fn rtvirt_peak_kib(args: &[&str]) -> (Output, u64) {
    let out = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(env!("CARGO_BIN_EXE_rtvirt"))
        .args(args)
        .env("RTVIRT_HOST", "ideal")
        .output()
        .expect("/usr/bin/time (Debian package time) runs rtvirt");
    let kib = max_rss_kib(&String::from_utf8_lossy(&out.stderr));
    (out, kib)
}

/// "Maximum resident set size" (KiB) from `/usr/bin/time -v`'s report in `stderr`.
pub fn max_rss_kib(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in /usr/bin/time's report: {stderr}"))
}
