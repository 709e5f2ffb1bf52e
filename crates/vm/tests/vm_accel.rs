//! The accelerator choice for real: `auto` boots a probe guest under KVM within its bound, falls
//! back to TCG when that fails (as on nested-PVM build machines), caches the answer, and the
//! chosen accelerator really boots the guest.

use rtvirt_vm::accel::{self, AccelChoice};
use rtvirt_vm::image::{self, ImageSpec};
use rtvirt_vm::{paths, Flavour, Guest, GuestConfig};
use std::time::{Duration, Instant};

#[test]
fn auto_probes_within_its_bound_caches_and_the_choice_boots() {
    let cache = paths::cache_dir();
    let spec = ImageSpec::standard(&cache, Flavour::Nrt, None).expect("kernel package fetched by scripts/setup.sh");
    let img = image::build(&cache, &spec).unwrap();
    let probe_cache = tempfile::tempdir().unwrap();
    let bound = Duration::from_secs(8);

    let t0 = Instant::now();
    let first = accel::resolve(AccelChoice::Auto, probe_cache.path(), &img, bound).unwrap();
    // the bound plus QEMU start/stop, on a loaded 2-core machine
    assert!(t0.elapsed() < bound + Duration::from_secs(30), "probe took {:?}", t0.elapsed());
    assert!(!first.cached && !first.reason.is_empty());
    let again = accel::resolve(AccelChoice::Auto, probe_cache.path(), &img, bound).unwrap();
    assert!(again.cached);
    assert_eq!((again.accel, &again.reason), (first.accel, &first.reason));
    assert!(!paths::guest_run_dir(&format!("rtvirt-kvm-probe-{}", std::process::id())).exists());

    let mut cfg = GuestConfig::new("vmtest-accel", first.accel, Duration::from_secs(60));
    cfg.memory_mib = 256;
    cfg.boot_timeout = Duration::from_secs(120);
    let mut g = Guest::start(&img, &cfg, "echo booted").unwrap();
    assert_eq!(g.record().accel, first.accel.name());
    assert_eq!(g.wait_done().unwrap().stdout, "booted\n");
}

#[test]
fn explicit_choices_are_taken_as_given() {
    let cache = paths::cache_dir();
    let spec = ImageSpec::standard(&cache, Flavour::Nrt, None).unwrap();
    let img = image::build(&cache, &spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let r = accel::resolve(AccelChoice::Tcg, dir.path(), &img, Duration::from_secs(1)).unwrap();
    assert_eq!(r.accel, rtvirt_vm::Accel::Tcg);
    assert!(!dir.path().join("accel.json").exists(), "explicit choices do not probe or cache");
    assert!(AccelChoice::parse("xen").unwrap_err().contains("auto, kvm or tcg"));
}
