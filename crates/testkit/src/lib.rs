//! Test support shared by the workspace's tests (a dev-dependency only). Its own tests are the
//! workspace's tidy checks (`tests/tidy`): no module cycle in any crate, the invariants of
//! docs/ARCHITECTURE.md.
//!
//! Tests that need root or a tool ask for it here instead of returning early in silence (and
//! what a machine may lack, e.g. a second CPU, with `skip_unless!`):
//!
//! ```ignore
//! #[test]
//! fn measures_a_timer() {
//!     rtvirt_testkit::require_root!();
//!     rtvirt_testkit::require_tool!("cyclictest");
//!     let _host = rtvirt_testkit::host_lock();
//!     ...
//! }
//! ```
//!
//! With `RTVIRT_REQUIRE_ROOT=1` (set by `make test` and so by CI) a missing requirement fails the
//! test with what is missing. Without it (a developer's laptop) the test is skipped loudly: a
//! `SKIPPED: <test>: <why>` line on stderr, written past the test harness's capture so that it
//! shows in `cargo test`'s output and can be counted (`grep -c '^SKIPPED: '`).

use std::io::Write as _;
use std::sync::{Mutex, MutexGuard};

/// The variable that says the environment must run every test (root, tools installed).
pub const REQUIRE_VAR: &str = "RTVIRT_REQUIRE_ROOT";
/// A file to which every test that needed root and ran (`ROOT: <test>`) and every skip
/// (`SKIPPED: <test>: <why>`) is appended, one line each (`make test` counts them).
pub const LOG_VAR: &str = "RTVIRT_TEST_LOG";

/// Appends `line` to the file named by [`LOG_VAR`], if any (one write: lines of tests running in
/// parallel do not interleave).
fn log(line: &str) {
    let Some(path) = std::env::var_os(LOG_VAR) else { return };
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}

fn test_name() -> String {
    std::thread::current().name().unwrap_or("?").to_string()
}

/// Whether the environment says every test must run (`RTVIRT_REQUIRE_ROOT=1`).
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `tool` is an executable on PATH (or, with a `/`, an executable file).
pub fn have_tool(tool: &str) -> bool {
    let executable = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt as _;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if tool.contains('/') {
        return executable(std::path::Path::new(tool));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| executable(&dir.join(tool)))
}

/// `ok`, or else: with [`REQUIRE_VAR`] set, a panic saying `missing`; without it, a
/// `SKIPPED: <test>: <missing>` line and false (the caller returns).
#[track_caller]
pub fn require(ok: bool, missing: &str) -> bool {
    decide(ok, missing, required())
}

#[track_caller]
fn decide(ok: bool, missing: &str, required: bool) -> bool {
    match verdict(ok, missing, required, &test_name()) {
        Verdict::Run => true,
        Verdict::Fail(why) => panic!("{why}"),
        Verdict::Skip(line) => {
            // Straight to the process's stderr: libtest captures only the print macros.
            let _ = writeln!(std::io::stderr(), "{line}");
            log(&line);
            false
        }
    }
}

#[derive(Debug, PartialEq)]
enum Verdict {
    Run,
    /// The panic message.
    Fail(String),
    /// The `SKIPPED: ` line.
    Skip(String),
}

fn verdict(ok: bool, missing: &str, required: bool, test: &str) -> Verdict {
    match (ok, required) {
        (true, _) => Verdict::Run,
        (false, true) => Verdict::Fail(format!("{REQUIRE_VAR}=1 and {test} cannot run: {missing}")),
        (false, false) => Verdict::Skip(format!("SKIPPED: {test}: {missing}")),
    }
}

/// `ok`, or else a `SKIPPED: <test>: <missing>` line and false, also with [`REQUIRE_VAR`] set.
pub fn skip_unless(ok: bool, missing: &str) -> bool {
    decide(ok, missing, false)
}

/// Root, else see [`require`].
#[track_caller]
pub fn require_root_or_skip() -> bool {
    let ok = require(is_root(), "needs root");
    if ok {
        log(&format!("ROOT: {}", test_name()));
    }
    ok
}

/// `tool` on PATH, else see [`require`].
#[track_caller]
pub fn require_tool_or_skip(tool: &str) -> bool {
    require(have_tool(tool), &format!("needs the tool `{tool}` (scripts/setup.sh installs it)"))
}

/// Returns from the calling test unless it runs as root (see [`require`]).
#[macro_export]
macro_rules! require_root {
    () => {
        if !$crate::require_root_or_skip() {
            return;
        }
    };
}

/// Returns from the calling test unless the tool is on PATH (see [`require`]).
#[macro_export]
macro_rules! require_tool {
    ($tool:expr) => {
        if !$crate::require_tool_or_skip($tool) {
            return;
        }
    };
}

/// Returns from the calling test, skipped loudly whatever the environment says, unless `ok`: for
/// what this machine may lack without anything being wrong with it (a second CPU, a cgroup v1
/// hierarchy). See [`skip_unless`].
#[macro_export]
macro_rules! skip_unless {
    ($ok:expr, $missing:expr) => {
        if !$crate::skip_unless($ok, $missing) {
            return;
        }
    };
}

/// The host lock: tests of one test binary that change host state (scheduling classes, cpusets,
/// tracefs, real-time threads) hold it, so that they run one at a time. (Test binaries
/// themselves run one after another.)
pub fn host_lock() -> MutexGuard<'static, ()> {
    static HOST: Mutex<()> = Mutex::new(());
    HOST.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_is_found_on_path_or_by_its_path() {
        assert!(have_tool("sh"));
        assert!(have_tool("/bin/sh"));
        assert!(!have_tool("rtvirt-no-such-tool"));
        assert!(!have_tool("/nonexistent/sh"));
    }

    #[test]
    fn a_met_requirement_runs_and_a_missing_one_skips_or_fails_as_the_environment_says() {
        assert_eq!(verdict(true, "root", true, "t"), Verdict::Run);
        assert_eq!(verdict(true, "root", false, "t"), Verdict::Run);
        assert_eq!(verdict(false, "needs root", false, "m::t"), Verdict::Skip("SKIPPED: m::t: needs root".into()));
        let fail = verdict(false, "needs root", true, "m::t");
        assert_eq!(fail, Verdict::Fail("RTVIRT_REQUIRE_ROOT=1 and m::t cannot run: needs root".into()));
    }
}
