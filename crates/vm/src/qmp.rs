//! A minimal QMP (QEMU Machine Protocol) client over the guest's unix socket: capability
//! negotiation and synchronous commands, skipping asynchronous events. Used to confirm the
//! accelerator (`query-kvm`), list vCPU threads (`query-cpus-fast`) and quit QEMU.

use crate::error::{Result, VmError};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// Connect, retrying while QEMU has created the socket file but does not listen yet.
fn connect_retrying(socket: &Path, timeout: Duration) -> Result<UnixStream> {
    let t0 = std::time::Instant::now();
    loop {
        match UnixStream::connect(socket) {
            Ok(s) => return Ok(s),
            Err(e) if t0.elapsed() < timeout && matches!(e.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(VmError::io(format!("connecting to QMP socket {}", socket.display()), e)),
        }
    }
}

pub struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    /// Connect, read the greeting and leave capability-negotiation mode.
    pub fn connect(socket: &Path, timeout: Duration) -> Result<Qmp> {
        let stream = connect_retrying(socket, timeout)?;
        stream.set_read_timeout(Some(timeout)).map_err(|e| VmError::io("QMP timeout", e))?;
        let writer = stream.try_clone().map_err(|e| VmError::io("QMP socket", e))?;
        let mut qmp = Qmp { reader: BufReader::new(stream), writer };
        let greeting = qmp.read_message()?;
        if greeting.get("QMP").is_none() {
            return Err(VmError::Spawn(format!("unexpected QMP greeting: {greeting}")));
        }
        qmp.execute("qmp_capabilities", Value::Null)?;
        Ok(qmp)
    }

    /// Run one command and return its `return` value.
    pub fn execute(&mut self, command: &str, arguments: Value) -> Result<Value> {
        let mut msg = json!({ "execute": command });
        if !arguments.is_null() {
            msg["arguments"] = arguments;
        }
        writeln!(self.writer, "{msg}").map_err(|e| VmError::io(format!("sending QMP {command}"), e))?;
        loop {
            let reply = self.read_message()?;
            if let Some(r) = reply.get("return") {
                return Ok(r.clone());
            }
            if let Some(err) = reply.get("error") {
                return Err(VmError::Spawn(format!("QMP {command} failed: {err}")));
            }
        }
    }

    fn read_message(&mut self) -> Result<Value> {
        let mut line = String::new();
        let n = self.reader.read_line(&mut line).map_err(|e| VmError::io("reading QMP", e))?;
        if n == 0 {
            return Err(VmError::Spawn("QMP socket closed".into()));
        }
        serde_json::from_str(&line).map_err(|e| VmError::Spawn(format!("bad QMP message {line:?}: {e}")))
    }

    /// Host thread ids of the vCPUs, in vCPU index order.
    pub fn vcpu_threads(&mut self) -> Result<Vec<i32>> {
        let cpus = self.execute("query-cpus-fast", Value::Null)?;
        let mut out: Vec<(i64, i32)> = cpus
            .as_array()
            .map(|a| a.iter().filter_map(|c| Some((c.get("cpu-index")?.as_i64()?, c.get("thread-id")?.as_i64()? as i32))).collect())
            .unwrap_or_default();
        out.sort();
        Ok(out.into_iter().map(|(_, t)| t).collect())
    }

    /// Whether QEMU runs the guest under KVM.
    pub fn kvm_enabled(&mut self) -> Result<bool> {
        Ok(self.execute("query-kvm", Value::Null)?.get("enabled").and_then(Value::as_bool).unwrap_or(false))
    }
}
