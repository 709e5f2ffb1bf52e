//! Real QEMU (TCG) boots of the busybox-only guest image: job output and exit status come back,
//! and nothing is left running - no QEMU, no runtime directory, no tap, no bridge - after a
//! normal run, a broken init, a hung job and a networked run; job files (fw_cfg) arrive and the
//! cpuset cgroup is mounted.
//! Needs what scripts/setup.sh installs: qemu-system-x86, busybox-static, cpio, the kernels.

use rtvirt_vm::image::{self, ImageSpec};
use rtvirt_vm::{net, paths, Accel, Flavour, Guest, GuestConfig, VmError};
use std::time::Duration;

fn image_with_init(init: Option<&str>) -> image::Image {
    let cache = paths::cache_dir();
    let mut spec = ImageSpec::standard(&cache, Flavour::Nrt, None).expect("kernel package fetched by scripts/setup.sh");
    if let Some(i) = init {
        spec.init_script = i.to_string();
    }
    image::build(&cache, &spec).unwrap()
}

fn config(name: &str, job_timeout_s: u64) -> GuestConfig {
    let mut c = GuestConfig::new(name, Accel::Tcg, Duration::from_secs(job_timeout_s));
    c.memory_mib = 256;
    c.boot_timeout = Duration::from_secs(60);
    c
}

/// No QEMU process of this guest and no runtime directory left.
fn assert_gone(name: &str, pid: u32) {
    assert!(!rtvirt_vm::runtime::process_alive(pid), "QEMU pid {pid} still running");
    assert!(!paths::guest_run_dir(name).exists(), "runtime dir of {name} left behind");
    for p in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd);
        assert!(
            !(cmd.contains("qemu-system") && cmd.contains(&format!("{name},debug-threads"))),
            "leftover QEMU: {cmd}"
        );
    }
}

#[test]
fn job_output_and_status_come_back_and_the_guest_is_gone_after() {
    let img = image_with_init(None);
    let name = "vmtest-boot";
    let pid;
    {
        let mut g =
            Guest::start(&img, &config(name, 60), "echo hello from; uname -r; cat /proc/cmdline >/dev/null; exit 3")
                .unwrap();
        pid = g.record().pid;
        assert!(g.dir().join("qmp.sock").exists());
        assert_eq!(rtvirt_vm::runtime::find(name).unwrap().pid, pid);
        assert_eq!(g.record().vcpu_threads.len(), 1);
        let out = g.wait_done().unwrap();
        assert_eq!(out.rc, 3);
        assert_eq!(out.stdout, format!("hello from\n{}\n", img.kernel_version));
    }
    assert_gone(name, pid);
}

#[test]
fn a_broken_init_is_an_early_exit_with_the_console_tail() {
    let img = image_with_init(Some("#!/bin/busybox sh\necho rtvirt-broken-init\nexit 1\n"));
    let name = "vmtest-broken";
    let mut g = Guest::start(&img, &config(name, 60), "true").unwrap();
    let pid = g.record().pid;
    let e = g.wait_done().unwrap_err();
    drop(g);
    let text = e.to_string();
    assert!(matches!(e, VmError::EarlyExit { .. }), "{text}");
    assert!(text.contains("rtvirt-broken-init") && text.contains("Kernel panic"), "{text}");
    assert_gone(name, pid);
}

#[test]
fn a_hung_job_times_out_and_is_killed() {
    let img = image_with_init(None);
    let name = "vmtest-hung";
    let mut g = Guest::start(&img, &config(name, 2), "echo started; sleep 600").unwrap();
    let pid = g.record().pid;
    let e = g.wait_done().unwrap_err();
    drop(g);
    let text = e.to_string();
    assert!(matches!(e, VmError::Timeout { .. }), "{text}");
    assert!(text.contains("running the job") && text.contains("rtvirt-init: running job"), "{text}");
    assert_gone(name, pid);
}

#[test]
fn a_networked_guest_reaches_the_host_over_tap_and_bridge_and_both_go_away() {
    let img = image_with_init(None);
    let name = "vmtest-net";
    let mut cfg = config(name, 60);
    cfg.network = true;
    let (pid, bridge, tap);
    {
        let mut g = Guest::start(
            &img,
            &cfg,
            "ip -4 addr show eth0 | grep -o 'inet [0-9./]*'; ping -c 2 -W 5 $RTVIRT_HOST >/dev/null && echo ping-ok",
        )
        .unwrap();
        pid = g.record().pid;
        bridge = g.record().bridge.clone().unwrap();
        tap = g.record().tap.clone().unwrap();
        assert!(net::exists(&bridge) && net::exists(&tap));
        let out = g.wait_done().unwrap();
        let guest_ip = g.record().guest_ip.clone().unwrap();
        assert!(out.stdout.contains(&format!("inet {guest_ip}/24")), "{}\n{}", out.stdout, out.console_tail);
        assert!(out.stdout.contains("ping-ok"), "guest could not ping the host: {}\n{}", out.stdout, out.console_tail);
    }
    assert_gone(name, pid);
    assert!(!net::exists(&bridge) && !net::exists(&tap), "bridge {bridge} or tap {tap} left behind");
}

#[test]
fn job_files_arrive_in_files_and_the_cpuset_hierarchy_is_mounted() {
    let img = image_with_init(None);
    let name = "vmtest-files";
    let mut cfg = config(name, 60);
    cfg.files = vec![
        rtvirt_vm::GuestFile { name: "plan.json".into(), data: b"{\"x\": 1}\n".to_vec() },
        rtvirt_vm::GuestFile {
            name: "data/frames.csv".into(),
            data: (0..2000).map(|i| format!("{i}us\n")).collect::<String>().into_bytes(),
        },
    ];
    let job = "cat files/plan.json; wc -l < files/data/frames.csv; grep cpuset /proc/mounts | cut -d' ' -f2,3; cat \
               /sys/fs/cgroup/cpuset/cpuset.cpus";
    let mut g = Guest::start(&img, &cfg, job).unwrap();
    let pid = g.record().pid;
    let out = g.wait_done().unwrap();
    drop(g);
    assert_eq!(out.rc, 0, "{}", out.console_tail);
    assert_eq!(out.stdout, "{\"x\": 1}\n2000\n/sys/fs/cgroup/cpuset cgroup\n0\n", "{}", out.console_tail);
    assert_gone(name, pid);
}
