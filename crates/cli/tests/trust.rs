//! Trust boundaries of root on a shared host (issue 36), with the real binary: a process that only
//! says it is QEMU (python run through a symlink named `qemu-system-x86_64`, as user nobody) whose
//! QMP socket answers another process's thread id; a real QEMU, run as nobody, whose command line
//! names a QMP socket another process serves; two processes with one `-name`; a journal planted in
//! a study's `--out`; a journal entry outside the files rtvirt changes; a profile's NAPI device
//! that leads out of /sys/class/net. Each is refused (exit 2, saying why) and changes nothing.

mod host_support;

use host_support::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

/// A QMP server that says it is QEMU: every vCPU it reports is thread `VICTIM` (argv[1]), and
/// every client is served on a thread of its own (lines that are no command, such as a real
/// QEMU's greeting, are not answered). Its command line is QEMU's (`-name`, `-qmp`).
const FAKE_QEMU: &str = r#"
import json, os, socketserver, sys
victim = int(sys.argv[1])
args = sys.argv[2:]
path = args[args.index("-qmp") + 1][len("unix:"):].split(",")[0]
class Qmp(socketserver.StreamRequestHandler):
    def handle(self):
        say = lambda v: self.wfile.write((json.dumps(v) + "\n").encode())
        say({"QMP": {"version": {}, "capabilities": []}})
        for line in self.rfile:
            cmd = json.loads(line).get("execute")
            if cmd is None:
                continue
            answers = {"query-cpus-fast": [{"cpu-index": 0, "thread-id": victim}], "query-iothreads": []}
            say({"return": answers.get(cmd, {})})
class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    def handle_error(self, request, address):
        pass  # a client that only checked the socket is up
Server(path, Qmp).serve_forever()
"#;

/// A world-readable temporary directory with a subdirectory `nobody` may write.
fn shared_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let theirs = dir.path().join("nobody");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    (dir, theirs)
}

/// A child process run as user nobody, killed and reaped on drop.
struct AsNobody(Child);

impl AsNobody {
    fn start(program: &Path, args: &[&str]) -> AsNobody {
        let child = Command::new("setpriv")
            .args([format!("--reuid={NOBODY}"), format!("--regid={NOBODY}"), "--clear-groups".into()])
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("setpriv (util-linux)");
        AsNobody(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for AsNobody {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fake QEMU as nobody: `qemu-system-x86_64` (a symlink to python) serving `socket`, naming
/// thread `victim` as its vCPU.
fn fake_qemu(theirs: &Path, name: &str, socket: &Path, victim: u32) -> AsNobody {
    let exe = theirs.join("qemu-system-x86_64");
    if !exe.exists() {
        std::os::unix::fs::symlink("/usr/bin/python3", &exe).unwrap();
        std::fs::write(theirs.join("qmp.py"), FAKE_QEMU).unwrap();
    }
    let qmp = format!("unix:{},server=on,wait=off", socket.display());
    let script = theirs.join("qmp.py");
    let fake = AsNobody::start(&exe, &[script.to_str().unwrap(), &victim.to_string(), "-name", name, "-qmp", &qmp]);
    wait_for(socket);
    fake
}

fn wait_for(socket: &Path) {
    let start = Instant::now();
    while std::os::unix::net::UnixStream::connect(socket).is_err() {
        assert!(start.elapsed() < Duration::from_secs(20), "{} never served", socket.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn refused(o: &std::process::Output, why: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", text(o));
    assert!(String::from_utf8_lossy(&o.stderr).contains(why), "expected {why:?}: {}", text(o));
}

#[test]
fn a_fake_qemu_naming_another_process_thread_is_refused() {
    let _g = serial();
    let (dir, theirs) = shared_dir();
    let victim = Sleeper::start();
    let name = format!("trust-{}", std::process::id());
    let socket = theirs.join("qmp.sock");
    let fake = fake_qemu(&theirs, &format!("guest={name},debug-threads=on"), &socket, victim.pid());
    let plan = write(dir.path(), "plan.json", &plan_json(&[(&name, 1_000_000, 10_000_000, 10_000_000, last_cpu())]));
    let state = dir.path().join("state");
    let _revert = RevertGuard(state.clone());
    let before = snapshot(&[victim.pid()]);

    // by name: the process is python, whatever its command line says
    let o = run(rtvirt(&["host", "threads", "--vm", &name]));
    refused(&o, &format!("process {} runs /usr/bin/python3", fake.pid()));
    refused(&o, "not a QEMU system emulator");
    let o = run(apply(&plan, &state).args(["--vm", &format!("{name},vcpu=0")]));
    refused(&o, "not a QEMU system emulator");
    // by socket: the thread it names belongs to `sleep`, which is no QEMU either
    let o = run(apply(&plan, &state).args(["--vm", &format!("{name}={},vcpu=0", socket.display())]));
    refused(&o, &format!("process {} runs /usr/bin/sleep", victim.pid()));
    let o = run(rtvirt(&["host", "threads", "--qmp", socket.to_str().unwrap()]));
    refused(&o, "not trusted, nothing done");

    assert_eq!(snapshot(&[victim.pid()]), before, "the victim thread is untouched");
    assert!(!journal_exists(&state), "nothing was journaled");
}

#[test]
fn two_processes_with_one_name_are_refused_with_both_pids() {
    let _g = serial();
    let (_dir, theirs) = shared_dir();
    let victim = Sleeper::start();
    let name = format!("trust-twice-{}", std::process::id());
    let a = fake_qemu(&theirs, &name, &theirs.join("a.sock"), victim.pid());
    let b = fake_qemu(&theirs, &name, &theirs.join("b.sock"), victim.pid());
    let o = run(rtvirt(&["host", "threads", "--vm", &name]));
    refused(&o, "2 processes say -name");
    let (pa, pb) = (a.pid().min(b.pid()), a.pid().max(b.pid()));
    refused(&o, &format!("(PIDs {pa}, {pb})"));
}

/// A real QEMU run as nobody whose monitor is a client of the fake's socket: its command line
/// names the socket, but the process serving it is another one, so its answer is not QEMU's.
#[test]
fn a_real_qemu_is_refused_the_thread_ids_of_a_socket_it_does_not_serve() {
    let _g = serial();
    let (_dir, theirs) = shared_dir();
    let victim = Sleeper::start();
    let socket = theirs.join("fake.sock");
    let _fake = fake_qemu(&theirs, "guest=decoy", &socket, victim.pid());
    let name = format!("trust-real-{}", std::process::id());
    let qemu = AsNobody::start(
        Path::new("/usr/bin/qemu-system-x86_64"),
        &[
            "-M",
            "pc",
            "-accel",
            "tcg",
            "-smp",
            "1",
            "-m",
            "64",
            "-nodefaults",
            "-display",
            "none",
            "-S",
            "-name",
            &format!("guest={name},debug-threads=on"),
            "-chardev",
            &format!("socket,id=mon0,path={}", socket.display()),
            "-mon",
            "chardev=mon0,mode=control",
        ],
    );
    let start = Instant::now();
    while !procfs_tids_named(qemu.pid(), "CPU 0/TCG") {
        assert!(start.elapsed() < Duration::from_secs(20), "QEMU started no vCPU thread");
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = run(rtvirt(&["host", "threads", "--vm", &name]));
    refused(&o, &format!("process {} does not hold the listening socket {}", qemu.pid(), socket.display()));
}

fn procfs_tids_named(pid: u32, comm: &str) -> bool {
    rtvirt_os::procfs::tids(pid).into_iter().any(|t| rtvirt_os::procfs::stat(t).is_ok_and(|s| s.comm == comm))
}

/// A journal line undoing a file change: `path` gets `before` back.
fn file_entry(seq: u64, path: &Path, before: &str) -> String {
    let change = serde_json::json!({"kind": "file", "path": path, "before": before, "after": "x"});
    serde_json::json!({"session": 1, "seq": seq, "change": change}).to_string() + "\n"
}

#[test]
fn a_journal_planted_in_a_study_out_dir_stops_the_study_before_anything() {
    let (dir, _) = shared_dir();
    let target = write(dir.path(), "precious", "root's");
    let study = write(
        dir.path(),
        "s.toml",
        "name = \"s\"\nrepeats = 1\nduration = \"1s\"\n[[configuration]]\nname = \"stock\"\n[[measure]]\n\
         name = \"timer\"\nkind = \"timer\"\noptions = { cpus = \"0\", interval = \"1ms\" }\n",
    );
    // nobody made --out and the journal in it
    let out = dir.path().join("out");
    std::fs::create_dir_all(out.join("journal")).unwrap();
    let journal = write(&out.join("journal"), "journal.jsonl", &file_entry(1, &target, "planted"));
    for p in [&out, &out.join("journal"), &journal] {
        std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let o = run(rtvirt(&["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    refused(&o, &format!("journal {}", journal.display()));
    refused(&o, &format!("{} is owned by uid {NOBODY}", out.join("journal").display()));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root's");
    assert!(!out.join("runs").exists(), "no cell ran");

    // nobody's --out with no journal yet: nothing is written there (a symlink planted as the
    // index would have root create any file)
    let out = dir.path().join("out1");
    std::fs::create_dir(&out).unwrap();
    let created = dir.path().join("created-by-root");
    std::os::unix::fs::symlink(&created, out.join("index.json")).unwrap();
    std::os::unix::fs::lchown(out.join("index.json"), Some(NOBODY), Some(NOBODY)).unwrap();
    std::os::unix::fs::chown(&out, Some(NOBODY), Some(NOBODY)).unwrap();
    let o = run(rtvirt(&["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    refused(&o, &format!("{} is owned by uid {NOBODY}", out.display()));
    assert!(!created.exists(), "nothing written through the planted symlink");

    // a journal group-writable in a directory root owns is no better
    let out = dir.path().join("out2");
    std::fs::create_dir_all(out.join("journal")).unwrap();
    let journal = write(&out.join("journal"), "journal.jsonl", &file_entry(1, &target, "planted"));
    std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = run(rtvirt(&["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    refused(&o, "is writable by group or others (mode 666)");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root's");
}

#[test]
fn revert_refuses_entries_outside_the_files_rtvirt_changes_by_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(dir.path(), "x", "root's");
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let sys = Path::new("/sys/devices/system/cpu/cpu0/no-such-file");
    let via_proc = PathBuf::from(format!("/proc/self/root{}", target.display()));
    for (path, shown) in [
        (target.clone(), target.display().to_string()),
        (PathBuf::from("/etc/rtvirt-no-such-file"), "/etc/rtvirt-no-such-file".into()),
        (via_proc.clone(), format!("{} (resolved: {})", via_proc.display(), target.display())),
        (PathBuf::from("/sys/devices/../../etc/passwd"), "/sys/devices/../../etc/passwd".into()),
    ] {
        let journal = file_entry(1, sys, "") + &file_entry(2, &path, "planted");
        write(&state, "journal.jsonl", &journal);
        let o = run(rtvirt(&["host", "revert", "--state-dir", state.to_str().unwrap()]));
        refused(&o, "line 2: refusing to revert, nothing was undone");
        refused(&o, &format!("{shown} is not a file rtvirt changes"));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "root's");
        assert!(state.join("journal.jsonl").exists(), "the journal is kept");
    }
}

#[test]
fn a_napi_device_that_leaves_sys_class_net_is_refused_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    // /sys/class/net/../../../DIR/x/threaded is DIR/x/threaded
    let fake = dir.path().join("x");
    std::fs::create_dir(&fake).unwrap();
    let threaded = write(&fake, "threaded", "0");
    let mtime = std::fs::metadata(&threaded).unwrap().modified().unwrap();
    let device = format!("../../..{}", fake.display());
    let profile = write(
        dir.path(),
        "p.toml",
        &format!("schema = \"rtvirt.profile/v1\"\n\n[[set]]\nrole = \"napi\"\ndevice = {device:?}\n"),
    );
    let state = dir.path().join("state");
    let o = run(apply(&profile, &state));
    refused(&o, &format!("{}:line 5, column", profile.display()));
    refused(&o, "field `set[0].device`");
    refused(&o, "is not a network interface name");
    assert_eq!(std::fs::read_to_string(&threaded).unwrap(), "0");
    assert_eq!(std::fs::metadata(&threaded).unwrap().modified().unwrap(), mtime, "nothing written");
    assert!(!journal_exists(&state));
}
