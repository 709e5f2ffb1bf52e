//! Choosing the accelerator. KVM where it can really boot a standard guest kernel, otherwise TCG.
//! `/dev/kvm` existing is not enough: under nested PVM (this project's build machines) a standard
//! kernel hangs under KVM, and some hosts refuse `-cpu host`. So the choice comes from a short,
//! bounded boot probe (a guest that only echoes a line), cached in `<cache>/accel.json` per host
//! kernel, QEMU version and `/dev/kvm` presence. TCG timings are NOT representative of real
//! hardware: results record `"accel": "tcg"` and a warning saying so.

use crate::config::{Accel, GuestConfig};
use crate::error::{Result, VmError};
use crate::guest::Guest;
use crate::image::Image;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// The warning every TCG result carries.
pub const TCG_WARNING: &str = "accelerator is TCG (software emulation): guest timings are NOT representative of real \
                               hardware; use a host where KVM boots the guest";

/// `--accel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccelChoice {
    /// KVM if the (cached) boot probe succeeds, else TCG.
    Auto,
    Kvm,
    Tcg,
}

impl AccelChoice {
    pub fn parse(text: &str) -> std::result::Result<AccelChoice, String> {
        match text {
            "auto" => Ok(AccelChoice::Auto),
            "kvm" => Ok(AccelChoice::Kvm),
            "tcg" => Ok(AccelChoice::Tcg),
            _ => Err(format!("\"{text}\" is not an accelerator (expected auto, kvm or tcg)")),
        }
    }
}

/// The outcome of a KVM boot probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    /// The accelerator to use.
    pub accel: Accel,
    /// Why (the probe's outcome).
    pub reason: String,
    /// What the cached result is valid for.
    pub host_key: String,
    /// Whether this came from the cache.
    #[serde(skip)]
    pub cached: bool,
}

/// What invalidates a cached probe: host kernel, QEMU version, /dev/kvm presence.
fn host_key(qemu: &Path) -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let qemu_version = std::process::Command::new(qemu)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").to_string())
        .unwrap_or_default();
    format!(
        "kernel {} | {} | /dev/kvm {}",
        kernel.trim(),
        qemu_version,
        if Path::new("/dev/kvm").exists() { "present" } else { "absent" }
    )
}

/// Resolve `choice` to an accelerator (probing KVM for `Auto`, with the cache).
pub fn resolve(choice: AccelChoice, cache: &Path, image: &Image, bound: Duration) -> Result<ProbeResult> {
    let qemu = GuestConfig::new("x", Accel::Tcg, bound).qemu;
    match choice {
        AccelChoice::Kvm => Ok(ProbeResult {
            accel: Accel::Kvm,
            reason: "requested with --accel kvm".into(),
            host_key: host_key(&qemu),
            cached: false,
        }),
        AccelChoice::Tcg => Ok(ProbeResult {
            accel: Accel::Tcg,
            reason: "requested with --accel tcg".into(),
            host_key: host_key(&qemu),
            cached: false,
        }),
        AccelChoice::Auto => {
            let key = host_key(&qemu);
            if let Some(mut r) = read_cache(cache).filter(|r| r.host_key == key) {
                r.cached = true;
                return Ok(r);
            }
            let r = probe(image, bound, key)?;
            write_cache(cache, &r)?;
            Ok(r)
        }
    }
}

/// Boot `image` under KVM with a job that only echoes; KVM if it answers within `bound`.
/// An interrupted probe is an error (nothing is learnt, nothing cached).
pub fn probe(image: &Image, bound: Duration, host_key: String) -> Result<ProbeResult> {
    if !Path::new("/dev/kvm").exists() {
        return Ok(ProbeResult {
            accel: Accel::Tcg,
            reason: "/dev/kvm does not exist".into(),
            host_key,
            cached: false,
        });
    }
    let mut cfg = GuestConfig::new(&format!("rtvirt-kvm-probe-{}", std::process::id()), Accel::Kvm, bound);
    cfg.boot_timeout = bound;
    cfg.memory_mib = 256;
    let outcome = Guest::start(image, &cfg, "echo rtvirt-kvm-ok").and_then(|mut g| g.wait_done());
    Ok(match outcome {
        Ok(out) if out.stdout.contains("rtvirt-kvm-ok") => ProbeResult {
            accel: Accel::Kvm,
            reason: format!("KVM booted the guest in {:.1}s", out.boot_time.as_secs_f64()),
            host_key,
            cached: false,
        },
        Ok(out) => ProbeResult {
            accel: Accel::Tcg,
            reason: format!("KVM guest answered {:?}", out.stdout.trim()),
            host_key,
            cached: false,
        },
        Err(e @ VmError::Interrupted { .. }) => return Err(e),
        Err(VmError::EarlyExit { status, stderr, .. }) => ProbeResult {
            accel: Accel::Tcg,
            reason: format!("QEMU with KVM exited at once ({status}): {}", stderr.split(" | ").next().unwrap_or("")),
            host_key,
            cached: false,
        },
        Err(VmError::Timeout { bound_s, phase, .. }) => ProbeResult {
            accel: Accel::Tcg,
            reason: format!(
                "the guest did not answer under KVM within {bound_s:.0}s ({phase}); e.g. nested virtualization that \
                 hangs guest kernels"
            ),
            host_key,
            cached: false,
        },
        Err(e) => ProbeResult {
            accel: Accel::Tcg,
            reason: format!("KVM cannot boot the guest: {}", first_line(&e.to_string())),
            host_key,
            cached: false,
        },
    })
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").chars().take(300).collect()
}

fn read_cache(cache: &Path) -> Option<ProbeResult> {
    serde_json::from_str(&std::fs::read_to_string(cache.join("accel.json")).ok()?).ok()
}

fn write_cache(cache: &Path, probe: &ProbeResult) -> Result<()> {
    std::fs::create_dir_all(cache).map_err(|e| VmError::io(format!("creating {}", cache.display()), e))?;
    let path = cache.join("accel.json");
    std::fs::write(&path, serde_json::to_string_pretty(probe).expect("serializable"))
        .map_err(|e| VmError::io(format!("writing {}", path.display()), e))
}
