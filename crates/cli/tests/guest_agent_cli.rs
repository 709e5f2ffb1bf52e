//! `rtvirt guest-agent`: what it may replace at its socket and ring paths.

use std::process::{Command, Output};

/// Run the agent for 100 ms with a file port in `dir`, its API socket at `socket`.
fn agent(dir: &std::path::Path, socket: &std::path::Path) -> Output {
    let port = dir.join("port");
    std::fs::write(&port, "").unwrap();
    Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["guest-agent", "--duration", "100ms", "--port"])
        .arg(&port)
        .arg("--api-socket")
        .arg(socket)
        .output()
        .unwrap()
}

fn ring(socket: &std::path::Path) -> std::path::PathBuf {
    let mut p = socket.as_os_str().to_owned();
    p.push(".ring");
    p.into()
}

/// A regular file at the socket path or at the ring path is refused (exit 2), not deleted.
#[test]
fn files_that_are_not_the_agents_are_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    std::fs::write(ring(&victim), "also precious").unwrap();
    let out = agent(dir.path(), &victim);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("victim.txt exists and is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert_eq!(std::fs::read_to_string(ring(&victim)).unwrap(), "also precious");

    // the socket path free, the ring path a file that is not a ring
    let socket = dir.path().join("api.sock");
    std::fs::write(ring(&socket), vec![0u8; 4096]).unwrap();
    let out = agent(dir.path(), &socket);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("api.sock.ring exists and is not a job ring"), "{err}");
    assert_eq!(std::fs::read(ring(&socket)).unwrap(), vec![0u8; 4096]);
    assert!(!socket.exists(), "nothing was bound");

    // a symbolic link to a file is no ring either
    std::fs::remove_file(ring(&socket)).unwrap();
    std::os::unix::fs::symlink(&victim, ring(&socket)).unwrap();
    assert_eq!(agent(dir.path(), &socket).status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

/// What an agent left behind (a socket nobody is bound to, its ring) is replaced; a socket in
/// use is refused.
#[test]
fn a_stale_socket_and_ring_are_replaced_and_a_live_socket_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("api.sock");
    let first = agent(dir.path(), &socket);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    // leave a stale socket (bound, then closed) and a ring the way a killed agent would
    drop(std::os::unix::net::UnixDatagram::bind(&socket).unwrap());
    let mut killed = Command::new(env!("CARGO_BIN_EXE_rtvirt"))
        .env("RTVIRT_HOST", "ideal")
        .args(["guest-agent", "--port", "/dev/null", "--api-socket"])
        .arg(&socket)
        .spawn()
        .unwrap();
    // the agent binds its socket once its ring is made: wait until the socket takes datagrams
    let probe = std::os::unix::net::UnixDatagram::unbound().unwrap();
    let bound = (0..2000).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        probe.connect(&socket).is_ok()
    });
    assert!(bound, "the agent never bound its socket");
    killed.kill().unwrap(); // SIGKILL: nothing is cleaned up
    killed.wait().unwrap();
    assert!(ring(&socket).exists(), "the killed agent's ring is left behind");
    let again = agent(dir.path(), &socket);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));

    let live = std::os::unix::net::UnixDatagram::bind(&socket).unwrap();
    let out = agent(dir.path(), &socket);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("in use"), "{err}");
    drop(live);
}
