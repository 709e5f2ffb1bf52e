//! `rtvirt plan --emit libvirt` and `--emit tuned`: the domain patches (generated, and a user's
//! real-looking domain patched with `--libvirt-domain`) validate with libvirt's own schema
//! (`virt-xml-validate FILE domain`, Debian's libvirt-clients), pin the emulator and I/O threads
//! off the reserved cores, run the vCPUs without a reservation under FIFO, turn the virtual PMU
//! off, and warn (stderr) for each of the user's pins the plan contradicts; the qemu hook runs with `sh`
//! against a stub `rtvirt` for hostile guest names (one argument each, nothing injected); the
//! tuned profile parses as INI (Python's configparser) and isolates exactly the plan's cores; bad
//! input exits 2 naming the file and line.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rtvirt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().expect("run rtvirt")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap().replace("\\u001b", "\\u001B")
}

/// A scenario of light EDF guests on `cores` cores; `vcpu` adds a `[guest.vcpu]` to the first.
fn scenario(names: &[&str], cores: u32, vcpu: &str) -> String {
    let mut s = format!("[host]\ncores = {cores}\n");
    for (i, n) in names.iter().enumerate() {
        let extra = if i == 0 { vcpu } else { "" };
        s += &format!(
            "[[guest]]\nname = {}\nscheduler = \"edf\"\nserver_periods = [\"5ms\"]\n{extra}[[guest.task]]\nname = \
             \"t\"\nperiod = \"10ms\"\nwcet = \"2ms\"\n",
            toml_string(n)
        );
    }
    s
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

fn plan(file: &Path, extra: &[&str]) -> serde_json::Value {
    let o = rtvirt(&[&["plan", file.to_str().unwrap(), "--format", "json"], extra].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `virt-xml-validate FILE domain` passes (libvirt's RelaxNG schema).
fn validates(file: &Path) {
    let o = Command::new("virt-xml-validate")
        .arg(file)
        .arg("domain")
        .output()
        .expect("virt-xml-validate (Debian package libvirt-clients; scripts/setup.sh installs it)");
    assert!(o.status.success(), "{} does not validate:\n{}\n{}", file.display(), text(&o), read(file));
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// (name, attributes) of every child element of `<cputune>`.
fn cputune(xml: &str) -> Vec<(String, Vec<(String, String)>)> {
    let doc = roxmltree::Document::parse(xml).unwrap();
    let tune = doc.descendants().find(|n| n.has_tag_name("cputune")).expect("a <cputune>");
    tune.children()
        .filter(|n| n.is_element())
        .map(|n| {
            let attributes = n.attributes().map(|a| (a.name().to_string(), a.value().to_string())).collect();
            (n.tag_name().name().to_string(), attributes)
        })
        .collect()
}

/// (name, attributes) of every child element of `<features>`.
fn features(xml: &str) -> Vec<(String, Vec<(String, String)>)> {
    let doc = roxmltree::Document::parse(xml).unwrap();
    let features = doc.descendants().find(|n| n.has_tag_name("features")).expect("a <features>");
    features
        .children()
        .filter(|n| n.is_element())
        .map(|n| {
            let attributes = n.attributes().map(|a| (a.name().to_string(), a.value().to_string())).collect();
            (n.tag_name().name().to_string(), attributes)
        })
        .collect()
}

/// The `rtvirt: warning:` lines of stderr.
fn warnings(o: &Output) -> Vec<String> {
    let err = String::from_utf8_lossy(&o.stderr);
    err.lines().filter_map(|l| l.strip_prefix("rtvirt: warning: ")).map(String::from).collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn generated_domain_patches_validate_and_pin_everything() {
    let dir = tempfile::tempdir().unwrap();
    let vcpu = "[guest.vcpu]\npolicy = \"fifo\"\npriority = 10\n";
    let file = write(dir.path(), "s.toml", &scenario(&["rt1", "rt2"], 4, vcpu));
    let p = plan(&file, &[]);
    let out = dir.path().join("out");
    let o = rtvirt(&["plan", file.to_str().unwrap(), "--emit", "libvirt", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let listed: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(listed.len(), 3, "two patches and the hook: {listed:?}");
    let used: BTreeSet<u64> = p["guests"].as_array().unwrap().iter().map(|g| g["core"].as_u64().unwrap()).collect();
    let free: Vec<String> = (0..4).filter(|c| !used.contains(c)).map(|c| c.to_string()).collect();
    let free = free.join(",");
    for (i, guest) in ["rt1", "rt2"].iter().enumerate() {
        let patch = out.join(format!("{guest}.xml"));
        validates(&patch);
        let xml = read(&patch);
        let core = p["guests"][i]["core"].to_string();
        let mut expected = vec![
            ("vcpupin".to_string(), pairs(&[("vcpu", "0"), ("cpuset", &core)])),
            ("emulatorpin".to_string(), pairs(&[("cpuset", &free)])),
            ("iothreadpin".to_string(), pairs(&[("iothread", "1"), ("cpuset", &free)])),
        ];
        if i == 0 {
            // the scenario runs this vCPU under FIFO 10: libvirt gives it that at start
            let sched = pairs(&[("vcpus", "0"), ("scheduler", "fifo"), ("priority", "10")]);
            expected.push(("vcpusched".to_string(), sched));
        }
        assert_eq!(cputune(&xml), expected, "{xml}");
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let backing = doc.descendants().find(|n| n.has_tag_name("memoryBacking")).expect("memoryBacking");
        let kinds: Vec<&str> = backing.children().filter(|n| n.is_element()).map(|n| n.tag_name().name()).collect();
        assert_eq!(kinds, ["hugepages", "locked"]);
        assert_eq!(features(&xml), [("pmu".to_string(), pairs(&[("state", "off")]))], "{xml}");
        let g = &p["guests"][i];
        let reservation =
            format!("runtime {} ns, deadline {} ns, period {} ns", g["budget_ns"], g["deadline_ns"], g["period_ns"]);
        assert!(xml.contains(&reservation), "the patch states the reservation the hook applies: {xml}");
    }
    assert!(std::fs::metadata(out.join("qemu")).unwrap().permissions().mode() & 0o111 != 0, "the hook is executable");

    // without --output-dir: several files cannot go to stdout
    let o = rtvirt(&["plan", file.to_str().unwrap(), "--emit", "libvirt"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--output-dir"), "{}", text(&o));
}

/// A domain as virt-install writes one, with what users add: four vCPUs, two I/O threads,
/// their own cputune (shares and an old pin), 1 GiB huge pages, comments and a QEMU namespace.
const USER_DOMAIN: &str = r#"<!--
WARNING: THIS IS AN AUTO-GENERATED FILE. CHANGES TO IT ARE LIKELY TO BE
OVERWRITTEN AND LOST. Changes to this xml configuration should be made using:
  virsh edit plc
-->
<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>plc</name>
  <uuid>6b2c5e6a-1d39-4f4b-9c55-0d8d5a0a8a41</uuid>
  <memory unit='KiB'>2097152</memory>
  <currentMemory unit='KiB'>2097152</currentMemory>
  <memoryBacking>
    <hugepages>
      <page size='1' unit='G'/>
    </hugepages>
  </memoryBacking>
  <vcpu placement='static'>4</vcpu>
  <iothreads>2</iothreads>
  <cputune>
    <shares>2048</shares>
    <vcpupin vcpu='0' cpuset='3'/>
    <emulatorpin cpuset='0-3'/>
  </cputune>
  <os>
    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>
    <boot dev='hd'/>
  </os>
  <features>
    <acpi/>
    <apic/>
  </features>
  <cpu mode='host-passthrough' check='none' migratable='on'/>
  <clock offset='utc'>
    <timer name='rtc' tickpolicy='catchup'/>
    <timer name='pit' tickpolicy='delay'/>
    <timer name='hpet' present='no'/>
  </clock>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2' iothread='1'/>
      <source file='/var/lib/libvirt/images/plc.qcow2'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <interface type='network'>
      <mac address='52:54:00:6b:2c:5e'/>
      <source network='default'/>
      <model type='virtio'/>
    </interface>
    <console type='pty'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-name'/>
    <qemu:arg value='guest=plc,debug-threads=on'/>
  </qemu:commandline>
</domain>
"#;

#[test]
fn a_users_domain_is_patched_in_place_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.toml", &scenario(&["plc", "hmi"], 4, ""));
    let user = write(dir.path(), "plc.xml", USER_DOMAIN);
    validates(&user);
    let p = plan(&file, &[]);
    let out = dir.path().join("out");
    let o = rtvirt(&[
        "plan",
        file.to_str().unwrap(),
        "--emit",
        "libvirt",
        "--libvirt-domain",
        user.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let patched = out.join("plc.xml");
    validates(&patched);
    validates(&out.join("hmi.xml"));
    let xml = read(&patched);
    let core = p["guests"][0]["core"].to_string();
    let used: BTreeSet<u64> = p["guests"].as_array().unwrap().iter().map(|g| g["core"].as_u64().unwrap()).collect();
    let free: Vec<String> = (0..4).filter(|c| !used.contains(c)).map(|c| c.to_string()).collect();
    let free = free.join(",");
    // the user's emulator pin lets the emulator threads onto the reserved cores
    let line = USER_DOMAIN.lines().position(|l| l.contains("<emulatorpin")).unwrap() + 1;
    let emulator = format!(
        "plc.xml:line {line}, column 5: <emulatorpin cpuset='0-3'> contradicts the plan, which puts the emulator \
         threads on CPUs {free}: replaced"
    );
    assert!(warnings(&o).iter().any(|w| w.ends_with(&emulator)), "{}", text(&o));
    let mut expected = vec![("shares".to_string(), vec![])];
    expected.push(("vcpupin".into(), pairs(&[("vcpu", "0"), ("cpuset", &core)])));
    for vcpu in ["1", "2", "3"] {
        expected.push(("vcpupin".into(), pairs(&[("vcpu", vcpu), ("cpuset", &free)])));
    }
    expected.push(("emulatorpin".into(), pairs(&[("cpuset", &free)])));
    for id in ["1", "2"] {
        expected.push(("iothreadpin".into(), pairs(&[("iothread", id), ("cpuset", &free)])));
    }
    assert_eq!(cputune(&xml), expected, "{xml}");
    // the user's huge page size is kept, <locked/> added
    assert!(
        xml.contains(
            "<hugepages>\n      <page size='1' unit='G'/>\n    </hugepages>\n    <locked/>\n  </memoryBacking>"
        ),
        "{xml}"
    );
    // everything else is byte for byte the user's, with the virtual PMU off in its <features>
    let after_cputune = &USER_DOMAIN[USER_DOMAIN.find("  <os>").unwrap()..]
        .replace("    <apic/>\n  </features>", "    <apic/>\n    <pmu state=\"off\"/>\n  </features>");
    assert!(xml.ends_with(after_cputune.as_str()), "{xml}");
    let before_backing = &USER_DOMAIN[..USER_DOMAIN.find("  <memoryBacking>").unwrap()];
    assert!(xml.starts_with(before_backing), "{xml}");
}

#[test]
fn bad_domain_files_and_flags_exit_2_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.toml", &scenario(&["plc"], 2, ""));
    let f = file.to_str().unwrap();
    let out = dir.path().join("out");
    let o_dir = out.to_str().unwrap();
    let cases: [(&str, &str, &[&str]); 5] = [
        (
            "broken.xml",
            "<domain type='kvm'>\n  <name>plc</name>\n  <vcpu>2</vcpu\n</domain>\n",
            &["broken.xml", "line 4, column 1", "not well-formed"],
        ),
        (
            "other.xml",
            "<domain type='kvm'>\n  <name>scada</name>\n</domain>\n",
            &["other.xml", "line 2", "\"scada\" is not a guest", "\"plc\""],
        ),
        (
            "network.xml",
            "<network>\n  <name>plc</name>\n</network>\n",
            &["network.xml", "line 1", "expected a libvirt domain"],
        ),
        ("noname.xml", "<domain type='kvm'>\n  <vcpu>2</vcpu>\n</domain>\n", &["noname.xml", "line 1", "no <name>"]),
        (
            "vcpus.xml",
            "<domain type='kvm'>\n  <name>plc</name>\n  <vcpu>two</vcpu>\n</domain>\n",
            &["vcpus.xml", "line 3", "number of vCPUs"],
        ),
    ];
    for (name, content, expect) in cases {
        let path = write(dir.path(), name, content);
        let o = rtvirt(&[
            "plan",
            f,
            "--emit",
            "libvirt",
            "--libvirt-domain",
            path.to_str().unwrap(),
            "--output-dir",
            o_dir,
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", text(&o));
        let e = String::from_utf8_lossy(&o.stderr);
        for part in expect {
            assert!(e.contains(part), "{name}: expected {part:?} in {e}");
        }
        assert!(!out.exists(), "{name}: nothing written");
    }
    let domain = write(dir.path(), "plc.xml", "<domain type='kvm'><name>plc</name></domain>");
    let o = rtvirt(&["plan", f, "--emit", "chrt", "--libvirt-domain", domain.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--libvirt-domain"), "{}", text(&o));
    let o = rtvirt(&["plan", f, "--output-dir", o_dir]);
    assert_eq!(o.status.code(), Some(2), "--output-dir needs --emit: {}", text(&o));
    // guest names libvirt or the hook cannot take
    for (name, why) in [("a=b", "'='"), ("vm\ntouch x", "newline"), ("bell\u{7}", "control character")] {
        let bad = write(dir.path(), "bad.toml", &scenario(&["ok", name], 2, ""));
        let o = rtvirt(&["plan", bad.to_str().unwrap(), "--emit", "libvirt", "--output-dir", o_dir]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("guest[1].name") && text(&o).contains(why), "{}", text(&o));
        assert!(!out.exists(), "{name:?}: nothing written");
    }
}

/// A guest of two vCPUs, vCPU 1 housekeeping, on a host of two cores: vCPU 0 reserved on one
/// core, vCPU 1 (no reservation) on the other.
const HOUSEKEEPING_VCPU: &str = "[host]\ncores = 2\n[[guest]]\nname = \"rt\"\nscheduler = \"edf\"\nserver_periods = \
                                 [\"5ms\"]\nvcpus = 2\nhousekeeping = [1]\n[[guest.task]]\nname = \"t\"\nperiod = \
                                 \"10ms\"\nwcet = \"2ms\"\n";

#[test]
fn vcpus_without_a_reservation_run_fifo_and_the_emulator_stays_off_reserved_cores() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.toml", HOUSEKEEPING_VCPU);
    let p = plan(&file, &[]);
    let vcpus = p["guests"][0]["vcpus"].as_array().unwrap();
    let (reserved, other) = (vcpus[0]["core"].to_string(), vcpus[1]["core"].to_string());
    assert_eq!((vcpus[1]["model"].as_str(), reserved != other), (Some("none"), true), "{p}");
    let out = dir.path().join("out");
    let o = rtvirt(&["plan", file.to_str().unwrap(), "--emit", "libvirt", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(warnings(&o).is_empty(), "a core without a reservation is left: {}", text(&o));
    let patch = out.join("rt.xml");
    validates(&patch);
    // no core is free of vCPUs: the emulator and I/O threads go to the one without a reservation
    let expected = vec![
        ("vcpupin".to_string(), pairs(&[("vcpu", "0"), ("cpuset", &reserved)])),
        ("vcpupin".to_string(), pairs(&[("vcpu", "1"), ("cpuset", &other)])),
        ("emulatorpin".to_string(), pairs(&[("cpuset", &other)])),
        ("iothreadpin".to_string(), pairs(&[("iothread", "1"), ("cpuset", &other)])),
        ("vcpusched".to_string(), pairs(&[("vcpus", "1"), ("scheduler", "fifo"), ("priority", "1")])),
    ];
    assert_eq!(cputune(&read(&patch)), expected, "{}", read(&patch));

    // every core reserved: the emulator threads can only share one, and a warning says so
    let heavy = scenario(&["a", "b"], 2, "").replace("wcet = \"2ms\"", "wcet = \"4ms\"");
    let file = write(dir.path(), "heavy.toml", &heavy);
    let p = plan(&file, &[]);
    assert_ne!(p["guests"][0]["core"], p["guests"][1]["core"], "{p}");
    let o = rtvirt(&["plan", file.to_str().unwrap(), "--emit", "libvirt", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let w = warnings(&o);
    assert_eq!(w.len(), 1, "{}", text(&o));
    assert!(w[0].starts_with("every core of the plan's host (2) holds a vCPU with a reservation"), "{w:?}");
    assert!(w[0].contains("--cores 3"), "{w:?}");
    validates(&out.join("a.xml"));
}

#[test]
fn each_user_pin_the_plan_contradicts_is_warned_about_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.toml", HOUSEKEEPING_VCPU);
    let p = plan(&file, &[]);
    let vcpus = p["guests"][0]["vcpus"].as_array().unwrap();
    let (reserved, other) = (vcpus[0]["core"].to_string(), vcpus[1]["core"].to_string());
    // vCPU 0 and the emulator as planned; vCPU 1 and the I/O thread on the reserved core; a PMU
    let domain = format!(
        "<domain type='kvm'>\n  <name>rt</name>\n  <memory>1048576</memory>\n  <vcpu>2</vcpu>\n  \
         <iothreads>1</iothreads>\n  <cputune>\n    <vcpupin vcpu='0' cpuset='{reserved}'/>\n    <vcpupin vcpu='1' \
         cpuset='0-1'/>\n    <emulatorpin cpuset='{other}'/>\n    <iothreadpin iothread='1' cpuset='{reserved}'/>\n  \
         </cputune>\n  <os>\n    <type arch='x86_64'>hvm</type>\n  </os>\n  <features>\n    <acpi/>\n    <pmu \
         state='on'/>\n  </features>\n</domain>\n"
    );
    let user = write(dir.path(), "rt.xml", &domain);
    validates(&user);
    let out = dir.path().join("out");
    let args = ["plan", file.to_str().unwrap(), "--emit", "libvirt", "--libvirt-domain", user.to_str().unwrap()];
    let o = rtvirt(&[&args[..], &["--output-dir", out.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let at = |line: usize| format!("{}:line {line}, column 5: ", user.display());
    let expected = [
        format!(
            "{}<vcpupin vcpu='1' cpuset='0-1'> contradicts the plan, which puts vCPU 1 on CPU {other}: replaced",
            at(8)
        ),
        format!(
            "{}<iothreadpin iothread='1' cpuset='{reserved}'> contradicts the plan, which puts the I/O threads on CPU \
             {other}: replaced",
            at(10)
        ),
        format!("{}<pmu state=\"on\"> is replaced by <pmu state='off'/>: no virtual PMU in an RT guest", at(17)),
    ];
    assert_eq!(warnings(&o), expected, "{}", text(&o));
    let patched = out.join("rt.xml");
    validates(&patched);
    assert_eq!(
        features(&read(&patched)),
        [("acpi".to_string(), vec![]), ("pmu".to_string(), pairs(&[("state", "off")]))]
    );

    // a pin libvirt would not read is refused, located
    let bad = write(dir.path(), "bad.xml", &domain.replace("cpuset='0-1'", "cpuset='1-0'"));
    let args = ["plan", file.to_str().unwrap(), "--emit", "libvirt", "--libvirt-domain", bad.to_str().unwrap()];
    let o = rtvirt(&[&args[..], &["--output-dir", dir.path().join("out2").to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("bad.xml:line 8, column 5: <vcpupin cpuset=\"1-0\">: expected a libvirt CPU list"),
        "{}",
        text(&o)
    );
}

/// Names that create a file in the working directory if a script ever evaluates them.
const HOSTILE: [&str; 4] =
    ["a$(touch dollar)", "vm; touch semicolon; #", "c'$(touch quote)'\"", "-d `touch tick` > out"];

#[test]
fn the_hook_passes_each_domain_name_as_one_argument() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.toml", &scenario(&HOSTILE, 4, ""));
    let out = dir.path().join("out");
    let o = rtvirt(&["plan", file.to_str().unwrap(), "--emit", "libvirt", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for f in std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some()) {
        validates(&f);
    }
    // a stub rtvirt that records its arguments, NUL-separated, one call per line of the log
    let work = tempfile::tempdir().unwrap();
    let log = work.path().join("calls.log");
    let stub = write(
        work.path(),
        "rtvirt-stub",
        &format!("#!/bin/sh\nprintf '%s\\0' \"$@\" >> '{}'\necho >> '{}'\n", log.display(), log.display()),
    );
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let state = work.path().join("state");
    let hook = |args: &[&str]| {
        let o = Command::new("sh")
            .arg(out.join("qemu"))
            .args(args)
            .current_dir(work.path())
            .env("RTVIRT", &stub)
            .env("RTVIRT_HOOK_STATE", &state)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
    };
    let calls = || -> Vec<Vec<String>> {
        let t = std::fs::read_to_string(&log).unwrap_or_default();
        t.split("\0\n").filter(|c| !c.is_empty()).map(|c| c.split('\0').map(String::from).collect()).collect()
    };
    hook(&["unplanned", "started", "begin", "-"]);
    hook(&[HOSTILE[0], "prepare", "begin", "-"]);
    assert!(calls().is_empty(), "only planned domains, only started/release: {:?}", calls());
    let plan_file = state.join("plan.json");
    for (i, name) in HOSTILE.iter().enumerate() {
        hook(&[name, "started", "begin", "-"]);
        let guest_state = state.join(format!("guest{i}"));
        let expected = [
            "host",
            "apply",
            plan_file.to_str().unwrap(),
            &format!("--vm={name},vcpu=0"),
            "--state-dir",
            guest_state.to_str().unwrap(),
        ];
        assert_eq!(calls().last().unwrap(), &expected, "{:?}", calls());
        // release: nothing was journaled (the stub applies nothing), so nothing to revert
        hook(&[name, "release", "end", "-"]);
        assert_eq!(calls().len(), 2 * i + 1, "no revert without a journal");
        std::fs::create_dir_all(&guest_state).unwrap();
        hook(&[name, "release", "end", "-"]);
        let revert = ["host", "revert", "--state-dir", guest_state.to_str().unwrap()];
        assert_eq!(calls().last().unwrap(), &revert);
        std::fs::remove_dir(&guest_state).unwrap();
    }
    let written: serde_json::Value = serde_json::from_str(&read(&plan_file)).unwrap();
    let names: Vec<&str> = written["guests"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, HOSTILE, "the hook's plan is the plan");
    let mut files: Vec<String> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["calls.log", "rtvirt-stub", "state"], "a domain name ran a command");
}

#[test]
fn the_hook_reserves_every_vcpu_of_a_guest_of_several_and_vcpu_0_of_the_others() {
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/multi_vcpu_rt_vm.toml");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = rtvirt(&["plan", scenario, "--emit", "libvirt", "--output-dir", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let log = dir.path().join("calls.log");
    let stub = write(
        dir.path(),
        "rtvirt-stub",
        &format!("#!/bin/sh\nprintf '%s ' \"$@\" >> '{}'\necho >> '{}'\n", log.display(), log.display()),
    );
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let state = dir.path().join("state");
    for domain in ["rt-vm", "logger"] {
        let o = Command::new("sh")
            .arg(out.join("qemu"))
            .args([domain, "started", "begin", "-"])
            .env("RTVIRT", &stub)
            .env("RTVIRT_HOOK_STATE", &state)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{domain}: {}", text(&o));
    }
    let calls = read(&log);
    let vm_args: Vec<&str> = calls.lines().filter_map(|l| l.split(' ').find(|a| a.starts_with("--vm="))).collect();
    // both guests have several vCPUs: no vcpu= selector, `host apply` reserves each planned vCPU
    assert_eq!(vm_args, ["--vm=rt-vm", "--vm=logger"], "{calls}");
}

#[test]
fn tuned_profile_parses_as_ini_and_isolates_exactly_the_plans_cores() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "s.toml", &scenario(&["vm1", "vm2", "vm3"], 6, ""));
    let p = plan(&file, &["--heuristic", "wfd"]);
    let out = dir.path().join("rtvirt-profile");
    let args = ["plan", file.to_str().unwrap(), "--heuristic", "wfd", "--emit", "tuned"];
    let o = rtvirt(&[&args[..], &["--output-dir", out.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let conf = out.join("tuned.conf");
    assert_eq!(read(&conf), String::from_utf8(rtvirt(&args).stdout).unwrap(), "stdout and the file agree");
    let program = "import configparser, json, sys\n\
                   c = configparser.ConfigParser(interpolation=None)\n\
                   c.read_file(open(sys.argv[1]))\n\
                   print(json.dumps({s: dict(c[s]) for s in c.sections()}))\n";
    let o = Command::new("python3").args(["-c", program, conf.to_str().unwrap()]).output().expect("python3");
    assert!(o.status.success(), "not INI: {}\n{}", text(&o), read(&conf));
    let ini: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(ini["main"]["include"], "realtime-virtual-host");
    assert_eq!(ini["sysctl"]["kernel.sched_rt_runtime_us"], "950000", "deadline admission control stays on");
    let isolated: BTreeSet<u64> =
        ini["variables"]["isolated_cores"].as_str().unwrap().split(',').map(|c| c.parse().unwrap()).collect();
    let planned: BTreeSet<u64> = p["guests"].as_array().unwrap().iter().map(|g| g["core"].as_u64().unwrap()).collect();
    assert_eq!(isolated, planned);
    assert!(planned.len() > 1, "the plan spreads the guests (wfd)");
}
