//! A small QMP (QEMU Machine Protocol) client over a unix socket: greeting, `qmp_capabilities`,
//! then commands; asynchronous events are skipped. Used to find a guest's vCPU threads
//! (`query-cpus-fast`) and iothreads (`query-iothreads`).
//!
//! Hand-written (about 100 lines) because the Rust QMP crates are async/tokio-based or
//! unmaintained, and rtvirt only needs two synchronous queries.

use crate::error::{OsError, Result};
use serde::Deserialize;
use serde_json::{json, Value};
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
        let greeting = q.read_message()?;
        if greeting.get("QMP").is_none() {
            return Err(q.error(format!("not a QMP greeting: {greeting}")));
        }
        q.execute("qmp_capabilities", None)?;
        Ok(q)
    }

    /// Run one command and return its "return" value.
    pub fn execute(&mut self, command: &str, arguments: Option<Value>) -> Result<Value> {
        let mut msg = json!({ "execute": command });
        if let Some(a) = arguments {
            msg["arguments"] = a;
        }
        let line = format!("{msg}\n");
        self.writer.write_all(line.as_bytes()).map_err(|e| self.error(format!("send {command}: {e}")))?;
        loop {
            let reply = self.read_message()?;
            if reply.get("event").is_some() {
                continue;
            }
            if let Some(r) = reply.get("return") {
                return Ok(r.clone());
            }
            let desc = reply.pointer("/error/desc").and_then(Value::as_str).unwrap_or("unexpected reply");
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
        let v = self.execute("query-name", None)?;
        Ok(v.get("name").and_then(Value::as_str).map(str::to_string))
    }

    fn read_message(&mut self) -> Result<Value> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).map_err(|e| self.error(format!("read: {e}")))?;
        if n == 0 {
            return Err(self.error("QEMU closed the connection (another QMP client connected?)".into()));
        }
        serde_json::from_str(&line).map_err(|e| self.error(format!("bad JSON from QEMU: {e}")))
    }

    fn error(&self, message: String) -> OsError {
        OsError::Qmp { socket: self.socket.clone(), message }
    }
}
