//! A small QMP (QEMU Machine Protocol) client over a unix socket: greeting, `qmp_capabilities`,
//! then commands; asynchronous events are skipped. Used to find a guest's vCPU threads
//! (`query-cpus-fast`) and iothreads (`query-iothreads`).
//!
//! Hand-written (about 100 lines) because the Rust QMP crates are async/tokio-based or
//! unmaintained, and rtvirt only needs two synchronous queries.

use crate::error::{OsError, Result};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long to wait for QEMU to answer (QEMU serves one QMP client at a time per socket).
pub const TIMEOUT: Duration = Duration::from_secs(5);

pub struct Qmp {
    socket: PathBuf,
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

/// One vCPU from `query-cpus-fast`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct QmpVcpu {
    #[serde(rename = "cpu-index")]
    pub index: u32,
    #[serde(rename = "thread-id")]
    pub thread_id: u32,
}

/// One iothread from `query-iothreads`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct QmpIothread {
    pub id: String,
    #[serde(rename = "thread-id")]
    pub thread_id: u32,
}

/// A command as sent: `{"execute": ..., "arguments": ...}`.
#[derive(Serialize)]
struct Command<'a> {
    execute: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Value>,
}

/// A message from QEMU: the greeting (`QMP`), an asynchronous event, or a command's reply
/// (`return` or `error`).
#[derive(Deserialize)]
struct Message {
    #[serde(rename = "QMP")]
    greeting: Option<IgnoredAny>,
    event: Option<IgnoredAny>,
    #[serde(rename = "return")]
    value: Option<Value>,
    error: Option<ReplyError>,
}

#[derive(Deserialize)]
struct ReplyError {
    desc: Option<String>,
}

/// The reply of `query-name`.
#[derive(Deserialize)]
struct QueryName {
    name: Option<String>,
}

/// The reply of `query-kvm`.
#[derive(Deserialize)]
struct QueryKvm {
    #[serde(default)]
    enabled: bool,
}

impl Qmp {
    /// Connect, read the greeting and leave capabilities negotiation mode.
    pub fn connect(socket: &Path) -> Result<Qmp> {
        Qmp::connect_with_timeout(socket, TIMEOUT)
    }

    /// As [`Qmp::connect`], waiting at most `timeout` for each answer.
    pub fn connect_with_timeout(socket: &Path, timeout: Duration) -> Result<Qmp> {
        let err = |m: String| OsError::Qmp { socket: socket.to_path_buf(), message: m };
        if !socket.exists() {
            return Err(err(
                "no such socket (is the VM running, and was QEMU started with -qmp unix:PATH,server=on,wait=off?)"
                    .into(),
            ));
        }
        let stream =
            UnixStream::connect(socket).map_err(|e| err(format!("cannot connect: {e} (is the VM running?)")))?;
        stream.set_read_timeout(Some(timeout)).map_err(|e| err(e.to_string()))?;
        stream.set_write_timeout(Some(timeout)).map_err(|e| err(e.to_string()))?;
        let writer = stream.try_clone().map_err(|e| err(e.to_string()))?;
        let mut q = Qmp { socket: socket.to_path_buf(), reader: BufReader::new(stream), writer };
        let greeting = q.read_line()?;
        if !matches!(serde_json::from_str(&greeting), Ok(Message { greeting: Some(_), .. })) {
            return Err(q.error(format!("not a QMP greeting: {}", greeting.trim())));
        }
        q.execute("qmp_capabilities", None)?;
        Ok(q)
    }

    /// Run one command and return its "return" value.
    pub fn execute(&mut self, command: &str, arguments: Option<Value>) -> Result<Value> {
        let message = serde_json::to_string(&Command { execute: command, arguments })
            .map_err(|e| self.error(format!("encode {command}: {e}")))?;
        let line = format!("{message}\n");
        self.writer.write_all(line.as_bytes()).map_err(|e| self.error(format!("send {command}: {e}")))?;
        loop {
            let reply = self.read_message()?;
            if reply.event.is_some() {
                continue;
            }
            if let Some(value) = reply.value {
                return Ok(value);
            }
            let desc = reply.error.and_then(|e| e.desc).unwrap_or_else(|| "unexpected reply".into());
            return Err(self.error(format!("{command}: {desc}")));
        }
    }

    /// `query-cpus-fast`: every vCPU with its host thread id.
    pub fn vcpus(&mut self) -> Result<Vec<QmpVcpu>> {
        let v = self.execute("query-cpus-fast", None)?;
        serde_json::from_value(v).map_err(|e| self.error(format!("query-cpus-fast: {e}")))
    }

    /// `query-iothreads`: every iothread object with its host thread id.
    pub fn iothreads(&mut self) -> Result<Vec<QmpIothread>> {
        let v = self.execute("query-iothreads", None)?;
        serde_json::from_value(v).map_err(|e| self.error(format!("query-iothreads: {e}")))
    }

    /// `query-name`: the guest name given with -name (None if unnamed).
    pub fn name(&mut self) -> Result<Option<String>> {
        let reply = self.execute("query-name", None)?;
        Ok(serde_json::from_value::<QueryName>(reply).ok().and_then(|q| q.name))
    }

    /// `query-kvm`: whether the guest runs under KVM (false when QEMU does not say).
    pub fn kvm_enabled(&mut self) -> Result<bool> {
        let reply = self.execute("query-kvm", None)?;
        Ok(serde_json::from_value::<QueryKvm>(reply).is_ok_and(|q| q.enabled))
    }

    fn read_message(&mut self) -> Result<Message> {
        let line = self.read_line()?;
        serde_json::from_str(&line).map_err(|e| self.error(format!("bad JSON from QEMU: {e}")))
    }

    fn read_line(&mut self) -> Result<String> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).map_err(|e| self.error(format!("read: {e}")))?;
        if n == 0 {
            return Err(self.error("QEMU closed the connection (another QMP client connected?)".into()));
        }
        Ok(line)
    }

    fn error(&self, message: String) -> OsError {
        OsError::Qmp { socket: self.socket.clone(), message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixListener;

    /// A peer speaking QMP on a real unix socket: greets, then answers each command line with the
    /// next of `replies` (an event first when a reply starts with `EVENT`), recording what it got.
    fn peer(socket: &Path, replies: Vec<&'static str>) -> std::thread::JoinHandle<Vec<String>> {
        let listener = UnixListener::bind(socket).unwrap();
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut writer = stream.try_clone().unwrap();
            writeln!(writer, r#"{{"QMP": {{"version": {{}}, "capabilities": []}}}}"#).unwrap();
            let mut received = Vec::new();
            let mut lines = BufReader::new(stream).lines();
            for reply in std::iter::once("{\"return\": {}}").chain(replies) {
                received.push(lines.next().unwrap().unwrap());
                if let Some(rest) = reply.strip_prefix("EVENT") {
                    writeln!(writer, r#"{{"event": "RESUME", "timestamp": {{}}}}"#).unwrap();
                    writeln!(writer, "{rest}").unwrap();
                } else {
                    writeln!(writer, "{reply}").unwrap();
                }
            }
            received
        })
    }

    #[test]
    fn commands_get_their_return_value_skipping_events_and_errors_name_qemus_reason() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("qmp.sock");
        let replies = vec![
            r#"EVENT{"return": [{"cpu-index": 0, "thread-id": 41}]}"#,
            r#"{"return": {"enabled": true, "present": true}}"#,
            r#"{"return": {"name": "rt-guest"}}"#,
            r#"{"error": {"class": "CommandNotFound", "desc": "The command nope has not been found"}}"#,
        ];
        let qemu = peer(&socket, replies);
        let mut qmp = Qmp::connect(&socket).unwrap();
        assert_eq!(qmp.vcpus().unwrap(), [QmpVcpu { index: 0, thread_id: 41 }]);
        assert!(qmp.kvm_enabled().unwrap());
        assert_eq!(qmp.name().unwrap().as_deref(), Some("rt-guest"));
        let e = qmp.execute("nope", Some(serde_json::json!({"x": 1}))).unwrap_err().to_string();
        assert!(e.contains("nope: The command nope has not been found"), "{e}");
        let received = qemu.join().unwrap();
        assert_eq!(received[0], r#"{"execute":"qmp_capabilities"}"#);
        assert_eq!(received[4], r#"{"execute":"nope","arguments":{"x":1}}"#);
    }

    #[test]
    fn a_peer_that_does_not_greet_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("not-qmp.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            writeln!(stream, r#"{{"hello": 1}}"#).unwrap();
        });
        let e = Qmp::connect(&socket).err().unwrap().to_string();
        assert!(e.contains(r#"not a QMP greeting: {"hello": 1}"#), "{e}");
        server.join().unwrap();
    }
}
