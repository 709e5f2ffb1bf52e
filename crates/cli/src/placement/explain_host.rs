//! `--in vm --explain`, the host's part: while the guest measures and explains its own late
//! samples, a watcher thread answers the guest's clock line (QEMU's third serial port,
//! `rtvirt_vm::clock`) and, from the guest's first question on, traces every host CPU
//! (rtvirt-probe's `explain::vcpu::HostRecorder`). When the guest's results come back, the host
//! side of each explained sample (the vCPU thread's preemption, sleep, wake-up, host IRQs) is laid
//! beside its guest causes on the host clock, and `--trace` writes one Perfetto trace with guest
//! and host tracks. A net server in a guest (`measure net client --in vm --explain`) gets the
//! clock line alone ([`answer_clock`]).

use rtvirt_model::results::Results;
use rtvirt_probe::explain::vcpu::{HostRecorder, HostTrace};
use rtvirt_vm::{measure, GuestConfig};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The guest's end of the clock line: the third serial port.
pub const GUEST_CLOCK_DEVICE: &str = "/dev/ttyS2";
/// Host ring buffer per CPU.
const HOST_BUFFER_KB: u32 = 4096;
/// How often the host trace is drained while the guest runs.
const READ_EVERY: std::time::Duration = std::time::Duration::from_millis(5);

/// Host-side work beside one guest run, on its own thread; stopped when dropped.
pub struct Watcher<T> {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<T, String>>>,
}

impl<T: Send + 'static> Watcher<T> {
    /// Run `work` (told to stop by the flag it gets) on a thread named `rtvirt-vm-watch`.
    pub fn start(work: impl FnOnce(&AtomicBool) -> Result<T, String> + Send + 'static) -> Watcher<T> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rtvirt-vm-watch".into())
            .spawn(move || work(&stopping))
            .expect("spawn the host watcher");
        Watcher { stop, thread: Some(thread) }
    }

    pub fn finish(mut self) -> Result<T, String> {
        self.stop.store(true, Ordering::Release);
        let thread = self.thread.take().expect("finished once");
        thread.join().unwrap_or_else(|_| Err("the host watcher panicked".into()))
    }
}

impl<T> Drop for Watcher<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A matrix cell's file: `path` itself for a single cell, else the cell's `label` added to its
/// name (`late.trace` of cell `vm/rt/none`: `late-vm_rt_none.trace`).
pub fn cell_path(path: &Path, label: Option<&str>, several: bool) -> std::path::PathBuf {
    let (true, Some(label)) = (several, label) else { return path.to_path_buf() };
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let label = label.replace(['/', ':', '@', ',', '+'], "_");
    let extension = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    path.with_file_name(format!("{stem}-{label}{extension}"))
}

/// Answer the clock line of the guest named `name` (QEMU started after this call, within
/// `rtvirt_vm::clock::connect`'s bound) until stopped: the handshakes answered.
pub fn answer_clock(name: &str) -> Watcher<u64> {
    let dir = rtvirt_vm::paths::guest_run_dir(name);
    Watcher::start(move |stop| {
        let line = rtvirt_vm::clock::connect(&dir).map_err(|e| e.to_string())?;
        match rtvirt_vm::clock::serve(line, stop, |_| {}) {
            0 => Err("the guest never asked the host's time (its clock line did not work)".into()),
            answered => Ok(answered),
        }
    })
}

/// Answer the clock line; trace the host from the first question until the guest ends.
fn watch(guest_dir: &Path, state_dir: &Path, stop: &AtomicBool) -> Result<HostTrace, String> {
    let line = rtvirt_vm::clock::connect(guest_dir).map_err(|e| e.to_string())?;
    let recorded = serve_beside(line, stop, || HostRecorder::start(state_dir, HOST_BUFFER_KB), HostRecorder::read)?;
    match recorded {
        Some(Ok(r)) => Ok(r.finish()),
        Some(Err(e)) => Err(e),
        None => Err("the guest never asked the host's time (its clock line did not work)".into()),
    }
}

/// Answer the clock `line` on a thread of its own until it ends or `stop` is set, and meanwhile
/// on this thread `start` a recorder at the first question and `read` it every [`READ_EVERY`].
/// The answers never wait for the recorder: starting it journals (fsync) and allocates ring
/// buffers, which on a loaded machine took longer than a guest waits for an answer.
/// None: no question was asked; Some(Err): the recorder failed to start or to read.
fn serve_beside<R>(
    line: std::os::unix::net::UnixStream,
    stop: &AtomicBool,
    start: impl FnOnce() -> Result<R, String>,
    mut read: impl FnMut(&mut R) -> Result<(), String>,
) -> Result<Option<Result<R, String>>, String> {
    let (asked, ended) = (AtomicBool::new(false), AtomicBool::new(false));
    std::thread::scope(|s| {
        let server = std::thread::Builder::new()
            .name("rtvirt-vm-clock".into())
            .spawn_scoped(s, || {
                rtvirt_vm::clock::serve(line, stop, |a| asked.store(a, Ordering::Release));
                ended.store(true, Ordering::Release);
            })
            .map_err(|e| format!("cannot start the clock line's thread: {e}"))?;
        while !asked.load(Ordering::Acquire) && !ended.load(Ordering::Acquire) {
            std::thread::sleep(READ_EVERY);
        }
        let mut recorder = asked.load(Ordering::Acquire).then(start);
        while !ended.load(Ordering::Acquire) {
            if let Some(Ok(r)) = recorder.as_mut() {
                if let Err(e) = read(r) {
                    recorder = Some(Err(format!("reading the host trace failed: {e}")));
                }
            }
            std::thread::sleep(READ_EVERY);
        }
        server.join().map_err(|_| "the clock line's thread panicked".to_string())?;
        Ok(recorder)
    })
}

/// Boot, measure with `--explain` while the host side is traced (the caller runs the host
/// loads around it); the results with the host side merged into their `explain` section.
pub fn measure_explained(
    image: &rtvirt_vm::image::Image,
    cfg: &GuestConfig,
    args: &[String],
) -> anyhow::Result<measure::Measured> {
    let state_dir = rtvirt_host::journal::default_state_dir();
    let outcome = measure::run_beside(image, cfg, args, |guest| {
        let dir = guest.dir().to_path_buf();
        Watcher::start(move |stop| watch(&dir, &state_dir, stop))
    });
    let (mut m, watcher) = outcome?;
    merge(&mut m.results, watcher.finish());
    Ok(m)
}

/// Lay the host side into the guest's explanation (or say why there is none).
fn merge(results: &mut Results, host: Result<HostTrace, String>) {
    let env = results.environment.clone().unwrap_or_default();
    let Some(explain) = results.explain.as_mut() else { return };
    match host {
        Ok(trace) => {
            let threads = env.vcpu_threads.unwrap_or_default();
            trace.merge_into(explain, &threads, env.accel.as_deref().unwrap_or("?"));
        }
        Err(why) => explain.limitations.push(format!("host side not traced: {why}")),
    }
}

/// `--trace` of one matrix cell: `path`, or with the cell's label before the extension when the
/// matrix has several cells. A trace that cannot be written is said, the cell's results stand.
pub fn write_cell_trace(results: &Results, path: &Path, several: bool) {
    let Some(e) = &results.explain else { return };
    let path = cell_path(path, results.label.as_deref(), several);
    let cpus: Vec<u32> = results.cpus.iter().map(|c| c.cpu).collect();
    let duration = rtvirt_model::Nanos(results.duration_ns);
    match crate::explain::write_trace(e, &cpus, duration, &path) {
        Ok(()) => eprintln!("vm: wrote trace {}", path.display()),
        Err(err) => eprintln!("vm: warning: {err:#}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::mpsc;
    use std::time::Duration;

    /// The guest's handshakes are answered while the recorder is still starting: here it starts
    /// only once the guest has had every answer (answering and starting on one thread, as before,
    /// would leave the guest waiting for as long as the start takes).
    #[test]
    fn the_clock_is_answered_while_the_recorder_starts() {
        let (host, guest) = UnixStream::pair().unwrap();
        let (answered, all_answered) = mpsc::channel();
        let (was_read, read_once) = mpsc::channel();
        let guest = std::thread::spawn(move || {
            let mut reader = BufReader::new(guest.try_clone().unwrap());
            let mut writer = guest;
            for _ in 0..16 {
                writer.write_all(b"T\n").unwrap();
                let mut time = String::new();
                reader.read_line(&mut time).unwrap();
                assert!(time.trim().parse::<u64>().is_ok(), "{time:?}");
            }
            answered.send(()).unwrap();
            read_once.recv_timeout(Duration::from_secs(60)).expect("the recorder is read while the guest runs");
        });
        let stop = AtomicBool::new(false);
        let start = || {
            all_answered.recv_timeout(Duration::from_secs(60)).map_err(|e| format!("not every answer came: {e}"))?;
            Ok(0u32)
        };
        let recorded = serve_beside(host, &stop, start, |reads| {
            *reads += 1;
            let _ = was_read.send(());
            Ok(())
        });
        guest.join().unwrap();
        let reads = recorded.unwrap().expect("the guest asked").unwrap();
        assert!(reads > 0);
    }
}
