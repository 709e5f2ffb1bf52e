//! A reader that has gone away (`rtvirt ... | head`) ends rtvirt quietly with 141, the shell's
//! code for SIGPIPE, and no panic message.

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};

/// A pipe whose read end is already closed: every write to it fails with EPIPE.
fn pipe_without_reader() -> OwnedFd {
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    unsafe { libc::close(fds[0]) };
    unsafe { OwnedFd::from_raw_fd(fds[1]) }
}

#[test]
fn closed_stdout_exits_141_without_a_panic_message() {
    for args in [&["plan", "--format", "json"][..], &["plan"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
            .env("RTVIRT_HOST", "ideal")
            .args(args)
            .stdout(Stdio::from(pipe_without_reader()))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn other_errors_keep_their_exit_code() {
    let out = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["plan", "/nonexistent.toml"])
        .stdout(Stdio::from(pipe_without_reader()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.toml"));
}
