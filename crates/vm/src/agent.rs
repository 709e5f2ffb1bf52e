//! The guest agent's channel (`rtvirt host observe`/`adapt`): a virtio-serial port named
//! `org.rtvirt.agent` (the `virtio_console` module in the guest) whose host end is the Unix
//! socket [`SOCKET`] of the guest's runtime directory (QEMU listens; the host connects when it
//! wants to hear). A guest started with `GuestConfig::agent` runs `rtvirt guest-agent` in the
//! background before its job, with the job-boundary API's socket exported to the job
//! (`RTVIRT_AGENT_SOCKET`), so that `measure tasks` in the guest reports each job's execution time.

use std::path::{Path, PathBuf};

/// The socket's name in the guest's runtime directory.
pub const SOCKET: &str = "agent.sock";
/// The port's name (the guest agent looks for it in `/sys/class/virtio-ports/*/name`).
pub const PORT_NAME: &str = "org.rtvirt.agent";
/// The job-boundary API's socket in the guest.
pub const API_SOCKET: &str = "/tmp/rtvirt-agent.sock";

/// The agent socket of the guest whose runtime directory is `dir`.
pub fn socket(dir: &Path) -> PathBuf {
    dir.join(SOCKET)
}

/// QEMU's arguments for the port.
pub fn qemu_args(dir: &Path) -> Vec<String> {
    let path = socket(dir).display().to_string().replace(',', ",,");
    vec![
        "-device".into(),
        "virtio-serial-pci,id=rtvirt-vser".into(),
        "-chardev".into(),
        format!("socket,id=rtvirt-agent,path={path},server=on,wait=off"),
        "-device".into(),
        format!("virtserialport,bus=rtvirt-vser.0,chardev=rtvirt-agent,name={PORT_NAME}"),
    ]
}

/// `job` preceded by starting the agent in the background (its messages go to the console, never
/// to the job's output) and exporting the job API's socket.
pub fn with_agent(job: &str) -> String {
    format!(
        "export RTVIRT_AGENT_SOCKET={API_SOCKET}\nrtvirt guest-agent --api-socket {API_SOCKET} > /dev/console 2>&1 &\n\
         i=0; while [ ! -S {API_SOCKET} ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n{job}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_starts_before_the_job_and_its_output_stays_off_the_job_output() {
        let j = with_agent("rtvirt measure tasks x");
        let agent = j.find("rtvirt guest-agent").unwrap();
        assert!(agent < j.find("rtvirt measure tasks").unwrap());
        assert!(j.contains("> /dev/console 2>&1 &"), "{j}");
        assert!(j.contains("export RTVIRT_AGENT_SOCKET=/tmp/rtvirt-agent.sock"), "{j}");
    }
}
