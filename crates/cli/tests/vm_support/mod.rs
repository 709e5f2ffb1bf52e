//! Shared by the vm_* tests: run rtvirt, and check that a guest left nothing behind.
#![allow(dead_code)]

use std::process::{Command, Output};

pub fn rtvirt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rtvirt"))
}

/// Run rtvirt with `args`; (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    output(rtvirt().args(args).output().unwrap())
}

pub fn output(o: Output) -> (i32, String, String) {
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// No QEMU process named `name`, no runtime directory, no rtvirt bridge/tap of a dead owner.
pub fn assert_nothing_left(name: &str) {
    for p in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let cmd = String::from_utf8_lossy(&std::fs::read(p.path().join("cmdline")).unwrap_or_default()).into_owned();
        assert!(!(cmd.contains("qemu-system") && cmd.contains(&format!("{name},debug-threads"))), "leftover QEMU for {name}: {cmd}");
    }
    assert!(!std::path::Path::new("/run/rtvirt/vm").join(name).exists(), "runtime dir of {name} left behind");
    for iface in std::fs::read_dir("/sys/class/net").unwrap().filter_map(|e| e.ok()) {
        let n = iface.file_name().into_string().unwrap();
        for prefix in ["rtvbr", "rtvtap"] {
            if let Some(pid) = n.strip_prefix(prefix).and_then(|p| p.parse::<u32>().ok()) {
                assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "interface {n} left by dead process {pid}");
            }
        }
    }
}
