//! Running an rtvirt measurement inside a guest: the guest runs `rtvirt <args> --format json`,
//! its stdout must be one `rtvirt.results/v1` document, which comes back with its environment
//! completed by what only the host knows: `in: "vm"`, the accelerator (and the TCG warning), the
//! guest kernel package, vCPUs, memory, vCPU pinning, boot time, host kernel.

use crate::accel::TCG_WARNING;
use crate::config::{Accel, GuestConfig};
use crate::error::{Result, VmError};
use crate::guest::{garbage_error, Guest, JobOutput};
use crate::image::Image;
use crate::init::shell_line;
use rtvirt_model::results::{Environment, Interval, Results, VcpuPinning, RESULTS_SCHEMA};
use rtvirt_model::vocab::MeasuredIn;

/// The guest job running `rtvirt <args>` with JSON output; then, if `cfg.bring_back` names a
/// file the job wrote, that file framed behind the results ([`FILE_BEGIN`], [`FILE_END`] with
/// its size in the guest), at most [`MAX_FILE`] bytes of it.
pub fn guest_job(args: &[String], cfg: &GuestConfig) -> String {
    let mut argv: Vec<String> = vec!["rtvirt".into()];
    argv.extend(args.iter().cloned());
    if !args.iter().any(|a| a == "--format" || a.starts_with("--format=")) {
        argv.extend(["--format".into(), "json".into()]);
    }
    let job = shell_line(&argv);
    let Some(file) = &cfg.bring_back else { return job };
    let f = shell_line(std::slice::from_ref(file));
    format!(
        "{job}\nrc=$?\nif [ -f {f} ]; then echo; echo {FILE_BEGIN}; head -c {MAX_FILE} {f}; echo; echo \"{FILE_END} $(wc -c < {f})\"; fi\nexit $rc"
    )
}

/// The line before a file brought back, and the start of the line after it (with the file's
/// size in the guest).
pub const FILE_BEGIN: &str = "RTVIRT-FILE-BEGIN";
pub const FILE_END: &str = "RTVIRT-FILE-END";
/// Bytes of a file brought back, at most: a `--break` trace of one vCPU's 4 MiB of ring-buffer
/// pages is some 6 MB of text (about 60 bytes an event here; docs/PERFORMANCE.md).
pub const MAX_FILE: u64 = 16 << 20;
/// What [`MAX_FILE`] takes on the job's serial line: measured here under TCG, 392 KB in 1.72 s
/// (0.23 MB/s: the output log's growth while a guest sent its break trace), so 16 MiB in ~73 s.
pub const MAX_FILE_TIME: std::time::Duration = std::time::Duration::from_secs(90);

/// A measurement made in a guest.
#[derive(Debug, Clone)]
pub struct Measured {
    pub results: Results,
    /// Exit status of rtvirt in the guest: 0, or 1 when the thing measured failed.
    pub rc: i32,
    /// The file of `GuestConfig::bring_back`, if the job wrote it.
    pub file: Option<BroughtBack>,
}

/// A file the job wrote, as it came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BroughtBack {
    pub text: String,
    /// Its size in the guest: more than `text` when it was cut at [`MAX_FILE`] or damaged on the way.
    pub guest_bytes: u64,
}

/// Split a job's output into the results before [`FILE_BEGIN`] and the file framed behind them
/// (the last [`FILE_END`] line ends it, so the file may hold anything).
pub fn split_file(stdout: &str) -> (&str, Option<BroughtBack>) {
    let begin = format!("\n{FILE_BEGIN}\n");
    let Some(b) = stdout.find(&begin) else { return (stdout, None) };
    let body = &stdout[b + begin.len()..];
    let end = format!("\n{FILE_END} ");
    let Some(e) = body.rfind(&end) else { return (&stdout[..b], None) };
    let size = body[e + end.len()..].trim().parse().unwrap_or(0);
    (&stdout[..b], Some(BroughtBack { text: body[..e].to_string(), guest_bytes: size }))
}

/// Boot a guest, run `rtvirt <args>` in it, return the annotated results.
pub fn run(image: &Image, cfg: &GuestConfig, args: &[String]) -> Result<Measured> {
    let mut guest = Guest::start(image, cfg, &guest_job(args, cfg))?;
    collect(image, cfg, &mut guest)
}

/// Boot a networked guest serving `rtvirt <args>`, wait until its console (the job's stderr)
/// shows `ready` (e.g. "listening on"), run `host_side` against it (it gets the guest's record: address, threads),
/// then collect the guest's own results. The host side's error ends the run at once.
pub fn run_serving<T>(
    image: &Image,
    cfg: &GuestConfig,
    args: &[String],
    ready: &str,
    host_side: impl FnOnce(&crate::runtime::GuestRecord) -> std::result::Result<T, String>,
) -> Result<(Measured, T)> {
    let (cfg, mut guest) = start_serving(image, cfg, args, ready)?;
    let host = host_side(guest.record())
        .map_err(|e| VmError::Invalid(format!("host side of the guest measurement failed: {e}")))?;
    Ok((collect(image, &cfg, &mut guest)?, host))
}

/// Boot a guest running `rtvirt <args>`, call `beside` with it once QEMU runs (to watch it from
/// the host: its runtime directory, its vCPU threads), wait for the job; the annotated results and
/// what `beside` returned.
pub fn run_beside<T>(
    image: &Image,
    cfg: &GuestConfig,
    args: &[String],
    beside: impl FnOnce(&Guest) -> T,
) -> Result<(Measured, T)> {
    let mut guest = Guest::start(image, cfg, &guest_job(args, cfg))?;
    let watching = beside(&guest);
    Ok((collect(image, cfg, &mut guest)?, watching))
}

/// Boot a networked guest serving `rtvirt <args>`, call `on_ready` (with the guest's record:
/// address, threads) once its console shows `ready`, and hold it until its job ends (the server's
/// own `--duration`): the annotated results. A signal (Ctrl-C) ends the hold early: the guest is
/// torn down and there are no results (`None`).
pub fn serve(
    image: &Image,
    cfg: &GuestConfig,
    args: &[String],
    ready: &str,
    on_ready: impl FnOnce(&crate::runtime::GuestRecord),
) -> Result<Option<Measured>> {
    let (cfg, mut guest) = start_serving(image, cfg, args, ready)?;
    on_ready(guest.record());
    match collect(image, &cfg, &mut guest) {
        Err(VmError::Interrupted { .. }) => Ok(None),
        other => other.map(Some),
    }
}

/// Boot a networked guest (`cfg` with the network on) serving `rtvirt <args>` and wait until its
/// console (where the job's stderr goes) shows `ready`: the configuration it runs with, and the guest.
fn start_serving(image: &Image, cfg: &GuestConfig, args: &[String], ready: &str) -> Result<(GuestConfig, Guest)> {
    let cfg = GuestConfig { network: true, ..cfg.clone() };
    let mut guest = Guest::start(image, &cfg, &guest_job(args, &cfg))?;
    guest.wait_for_console(ready)?;
    Ok((cfg, guest))
}

/// Wait for the guest's job to end; its results, annotated.
fn collect(image: &Image, cfg: &GuestConfig, guest: &mut Guest) -> Result<Measured> {
    let mut out = guest.wait_done()?;
    let (results, file) = split_file(&out.stdout);
    let file = file.filter(|_| cfg.bring_back.is_some());
    out.stdout = results.to_string();
    let mut results = parse(&cfg.name, &out)?;
    annotate(&mut results, image, cfg, guest, &out);
    Ok(Measured { results, rc: out.rc, file })
}

/// Complete `results` (measured on the host against a guest) with the guest's environment.
pub fn annotate_from(results: &mut Results, guest: &Results) {
    let env = results.environment.get_or_insert_with(Environment::default);
    env.r#in = Some(MeasuredIn::Vm);
    if let Some(g) = &guest.environment {
        env.accel = g.accel.clone();
        env.warning = g.warning.clone();
        env.guest_kernel = g.guest_kernel.clone();
        env.guest_kernel_version = g.guest_kernel_version.clone();
        env.vcpus = g.vcpus;
        env.memory_mib = g.memory_mib;
        env.vcpu_threads = g.vcpu_threads.clone();
        env.vcpu_pinning = g.vcpu_pinning.clone();
        env.guest_boot_ns = g.guest_boot_ns;
        env.guest_ip = g.guest_ip.clone();
        env.guest_environment = Some(Box::new(g.clone()));
    }
}

/// The job's stdout as a results document. Exit status 0 and 1 (the thing measured failed)
/// both carry results; anything else is an error. The per-interval reports printed before the
/// document (`measure timer --interval-report D --format json`) are kept as its `intervals`.
pub fn parse(name: &str, out: &JobOutput) -> Result<Results> {
    if out.rc != 0 && out.rc != 1 {
        return Err(garbage_error(
            name,
            &format!("rtvirt in the guest exited with status {} (its error is on the console)", out.rc),
            &out.stdout,
            out.console_tail.clone(),
        ));
    }
    let garbage = |why: String| {
        garbage_error(name, &format!("not an {RESULTS_SCHEMA} document: {why}"), &out.stdout, out.console_tail.clone())
    };
    let (doc, intervals) = json_stream(&out.stdout).map_err(garbage)?;
    let mut r: Results = serde_json::from_value(doc).map_err(|e| garbage(e.to_string()))?;
    if r.schema != RESULTS_SCHEMA {
        return Err(garbage_error(
            name,
            &format!("schema \"{}\", expected \"{RESULTS_SCHEMA}\"", r.schema),
            &out.stdout,
            out.console_tail.clone(),
        ));
    }
    if !intervals.is_empty() && r.intervals.is_none() {
        r.intervals = Some(intervals);
    }
    Ok(r)
}

/// The JSON values of a command's stdout from its first line starting with `{` (anything before
/// it, e.g. a "listening on" line of an older rtvirt, is skipped): `"type": "interval"` JSON
/// lines, then the results document.
fn json_stream(stdout: &str) -> std::result::Result<(serde_json::Value, Vec<Interval>), String> {
    let start =
        if stdout.starts_with('{') { 0 } else { stdout.find("\n{").map(|i| i + 1).ok_or("no JSON in the output")? };
    let mut values = serde_json::Deserializer::from_str(&stdout[start..])
        .into_iter::<serde_json::Value>()
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let doc = values.pop().ok_or("no JSON in the output")?;
    let intervals = values
        .into_iter()
        .map(|v| match serde_json::from_value::<Interval>(v.clone()) {
            Ok(i) if i.r#type.as_deref() == Some("interval") => Ok(i),
            _ => Err(format!(
                "a JSON value that is no interval report before the document: {}",
                v.to_string().chars().take(80).collect::<String>()
            )),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((doc, intervals))
}

/// Complete the environment with what the host knows about the guest.
fn annotate(results: &mut Results, image: &Image, cfg: &GuestConfig, guest: &Guest, out: &JobOutput) {
    let env = results.environment.get_or_insert_with(Environment::default);
    env.r#in = Some(MeasuredIn::Vm);
    let rec = guest.record();
    env.accel = Some(cfg.accel.name().into());
    if cfg.accel == Accel::Tcg {
        env.warning = Some(TCG_WARNING.into());
    }
    env.guest_kernel = Some(image.flavour.name().into());
    env.guest_kernel_version = Some(image.kernel_version.clone());
    env.vcpus = Some(cfg.vcpus);
    env.memory_mib = Some(cfg.memory_mib);
    env.vcpu_threads = Some(rec.vcpu_threads.clone());
    env.vcpu_pinning = Some(if cfg.pin.is_empty() {
        VcpuPinning::Unpinned("none".into())
    } else {
        VcpuPinning::Cpus(cfg.pin.iter().map(|&c| c as u32).collect())
    });
    env.guest_boot_ns = Some(out.boot_time.as_nanos() as u64);
    if let Ok(k) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        env.host_kernel = Some(k.trim().into());
    }
    env.guest_ip = rec.guest_ip.clone();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn out(stdout: &str, rc: i32) -> JobOutput {
        JobOutput {
            stdout: stdout.into(),
            rc,
            boot_time: Duration::ZERO,
            job_time: Duration::ZERO,
            console_tail: "    console".into(),
        }
    }

    #[test]
    fn guest_job_asks_for_json_once() {
        let cfg = GuestConfig::new("t", Accel::Tcg, std::time::Duration::from_secs(1));
        assert_eq!(guest_job(&["measure".into(), "timer".into()], &cfg), "rtvirt measure timer --format json");
        assert_eq!(
            guest_job(&["measure".into(), "--format".into(), "json".into()], &cfg),
            "rtvirt measure --format json"
        );
    }

    /// A file the job wrote comes back behind the results, framed; the frame's end is the last
    /// one, so the file may hold anything, even the frame's own lines.
    #[test]
    fn a_file_brought_back_is_framed_behind_the_results() {
        let cfg = GuestConfig {
            bring_back: Some("/tmp/late trace".into()),
            ..GuestConfig::new("t", Accel::Tcg, std::time::Duration::from_secs(1))
        };
        let job = guest_job(&["measure".into(), "timer".into()], &cfg);
        assert!(job.starts_with("rtvirt measure timer --format json\nrc=$?\nif [ -f '/tmp/late trace' ]"), "{job}");
        assert!(job.contains(&format!("head -c {MAX_FILE} '/tmp/late trace'")) && job.ends_with("exit $rc"), "{job}");
        let file = "# tracer: nop\nRTVIRT-FILE-END 3\n  <idle>-0 [000] sched_switch\n";
        let stdout = format!("{{\"a\": 1}}\n\n{FILE_BEGIN}\n{file}\n{FILE_END} {}\n", file.len());
        let (results, back) = split_file(&stdout);
        assert_eq!(results, "{\"a\": 1}\n");
        assert_eq!(back, Some(BroughtBack { text: file.to_string(), guest_bytes: file.len() as u64 }));
        assert_eq!(split_file("{}\n"), ("{}\n", None), "no file written");
        let cut = format!("{{}}\n\n{FILE_BEGIN}\n# tracer");
        assert_eq!(split_file(&cut), ("{}\n", None), "a frame without its end is no file");
    }

    #[test]
    fn results_garbage_and_failures_are_told_apart() {
        let doc = serde_json::to_string(&Results::new("timer", 5)).unwrap();
        assert_eq!(parse("g", &out(&doc, 0)).unwrap().kind, "timer");
        assert_eq!(parse("g", &out(&doc, 1)).unwrap().kind, "timer");
        assert_eq!(parse("g", &out(&format!("listening on 0.0.0.0:9000 (udp)\n{doc}\n"), 0)).unwrap().kind, "timer");
        let e = parse("g", &out("Segmentation fault\n", 0)).unwrap_err().to_string();
        assert!(e.contains("garbage") && e.contains("Segmentation fault") && e.contains("console"), "{e}");
        let e = parse("g", &out("", 2)).unwrap_err().to_string();
        assert!(e.contains("exited with status 2"), "{e}");
        let e = parse("g", &out(r#"{"schema":"other/v9","kind":"x","duration_ns":1}"#, 0)).unwrap_err().to_string();
        assert!(e.contains("other/v9"), "{e}");
        let e = parse("g", &out(&format!("{doc}\n{{\"truncated\": "), 0)).unwrap_err().to_string();
        assert!(e.contains("garbage") && e.contains("EOF"), "{e}");
    }

    #[test]
    fn interval_reports_before_the_document_become_its_intervals() {
        let mut doc = Results::new("timer", 5);
        doc.timer = Some(rtvirt_model::results::TimerSection { missed_periods: Some(0), ..Default::default() });
        let lines = [
            r#"{"type":"interval","t_ns":1000000000,"cpus":[{"cpu":0,"count":1000,"max_ns":51000}]}"#,
            r#"{"type":"interval","t_ns":2000000000,"cpus":[{"cpu":0,"count":1000,"max_ns":73000,"stall":true}]}"#,
        ];
        let stdout = format!("{}\n{}\n{}\n", lines[0], lines[1], serde_json::to_string(&doc).unwrap());
        let r = parse("g", &out(&stdout, 0)).unwrap();
        assert_eq!(r.kind, "timer");
        let intervals = r.intervals.as_ref().unwrap();
        assert_eq!(intervals.len(), 2);
        assert_eq!(intervals[1].cpus.as_ref().unwrap()[0].max_ns, Some(73000));
        assert_eq!(r.timer.unwrap().missed_periods, Some(0));
        // a pretty-printed document after the lines, too
        let stdout = format!("{}\n{}\n", lines[0], serde_json::to_string_pretty(&doc).unwrap());
        assert_eq!(parse("g", &out(&stdout, 1)).unwrap().intervals.unwrap().len(), 1);
        // anything else before the document is garbage
        let stdout = format!("{{\"type\":\"other\"}}\n{}\n", serde_json::to_string(&doc).unwrap());
        let e = parse("g", &out(&stdout, 0)).unwrap_err().to_string();
        assert!(e.contains("no interval report"), "{e}");
    }
}
