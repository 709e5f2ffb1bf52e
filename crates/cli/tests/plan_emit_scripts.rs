//! The scripts of `rtvirt plan --emit rtds` run with bash against stub commands (`xl`, and `touch`
//! for what an injection would run) on a PATH holding only the stubs, for guests with hostile
//! names from a scenario and from a CARTS file: no injected command runs, and every stub receives
//! each guest name as exactly one argument. The `chrt` script is run for real on real threads by
//! `plan_emit_deploy.rs` (root, host lock); here only its checks, which stop it before any change.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const STUBS: [&str; 2] = ["xl", "touch"];

/// Names that run `touch` when pasted unquoted into a shell script or a comment.
const HOSTILE: [&str; 6] = [
    "a$(touch dollar)",
    "vm\ntouch newline\n#",
    "b; touch semicolon; `touch backtick`",
    "c'$(touch quote)'\"",
    "d $HOME * \\ {x,y} ~ & | > out",
    "e\r\ttouch\u{1b}[0m ü",
];

fn rtvirt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvirt")).env("RTVIRT_HOST", "ideal").args(args).output().expect("run rtvirt")
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap().replace("\\u001b", "\\u001B")
}

/// A scenario with one light EDF guest per name, on as many cores.
fn scenario(names: &[&str]) -> String {
    let mut s = format!("name = \"hostile\"\n[host]\ncores = {}\n", names.len());
    for n in names {
        s += &format!(
            "\n[[guest]]\nname = {}\nscheduler = \"edf\"\nserver_periods = [\"10ms\"]\n\
             [[guest.task]]\nname = \"t\"\nperiod = \"20ms\"\nwcet = \"2ms\"\n",
            toml_string(n)
        );
    }
    s
}

/// A directory of stubs that append `name NUL argc NUL arg NUL ...` to `calls.log` beside them.
fn stubs(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let log = dir.join("calls.log");
    for name in STUBS {
        let path = bin.join(name);
        let body = format!("#!/bin/bash\nprintf '%s\\0' \"${{0##*/}}\" \"$#\" \"$@\" >> '{}'\n", log.display());
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    log
}

/// The calls recorded by the stubs: (command, arguments).
fn calls(log: &Path) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut fields = text.split('\0');
    let mut out = vec![];
    while let Some(name) = fields.next().filter(|n| !n.is_empty()) {
        let argc: usize = fields.next().unwrap().parse().unwrap();
        out.push((name.to_string(), (0..argc).map(|_| fields.next().unwrap().to_string()).collect()));
    }
    out
}

/// Runs `script` with bash in `dir`, PATH = the stubs only, `env` added; returns the calls.
fn run_script(dir: &Path, script: &str, env: &[(String, String)]) -> Vec<(String, Vec<String>)> {
    let log = stubs(dir);
    let file = dir.join("script.sh");
    std::fs::write(&file, script).unwrap();
    let o = Command::new("/bin/bash")
        .arg(&file)
        .current_dir(dir)
        .env_clear()
        .env("PATH", dir.join("bin"))
        .envs(env.iter().cloned())
        .output()
        .unwrap();
    assert!(o.status.success(), "script failed: {}\n{script}", String::from_utf8_lossy(&o.stderr));
    let made: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(made.len(), 3, "the script created files: {made:?}\n{script}");
    calls(&log)
}

fn emitted(input: &[&str], emit: &str, extra: &[&str]) -> String {
    let o = rtvirt(&[&["plan"], input, &["--emit", emit], extra].concat());
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn no_injection(calls: &[(String, Vec<String>)]) {
    assert!(calls.iter().all(|(c, _)| c != "touch"), "an injected command ran: {calls:?}");
}

#[test]
fn rtds_script_passes_each_domain_name_as_one_argument() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, scenario(&HOSTILE)).unwrap();
    let script = emitted(&[file.to_str().unwrap()], "rtds", &[]);
    let work = tempfile::tempdir().unwrap();
    let calls = run_script(work.path(), &script, &[]);
    no_injection(&calls);
    let mut migrated: Vec<&str> =
        calls.iter().filter(|(_, a)| a[0] == "cpupool-migrate").map(|(_, a)| a[1].as_str()).collect();
    let mut scheduled: Vec<&str> =
        calls.iter().filter(|(_, a)| a[0] == "sched-rtds").map(|(_, a)| a[2].as_str()).collect();
    let mut expected = HOSTILE.to_vec();
    expected.sort();
    migrated.sort();
    scheduled.sort();
    assert_eq!(migrated, expected, "{calls:?}");
    assert_eq!(scheduled, expected, "{calls:?}");
    assert!(calls.iter().filter(|(_, a)| a[0] == "cpupool-migrate").all(|(_, a)| a.len() == 3));
    assert!(calls.iter().filter(|(_, a)| a[0] == "sched-rtds").all(|(_, a)| a.len() == 9));
}

#[test]
fn names_from_a_carts_file_are_quoted_too() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("system.xml");
    std::fs::write(
        &xml,
        "<system os_scheduler=\"EDF\">\n\
         <component name=\"vm&#10;touch carts&#10;#\" scheduler=\"EDF\" min_period=\"10\" max_period=\"10\">\n\
         <task name=\"t\" p=\"20\" d=\"20\" e=\"2\"/>\n</component>\n</system>\n",
    )
    .unwrap();
    let name = "vm\ntouch carts\n#";
    let x = xml.to_str().unwrap();
    // the chrt script stops at its check of the (absent) thread, naming the guest, changing nothing
    let work = tempfile::tempdir().unwrap();
    let script = work.path().join("deploy.sh");
    std::fs::write(&script, emitted(&["--import-carts", x], "chrt", &[])).unwrap();
    let o = Command::new("sh")
        .arg(&script)
        .current_dir(work.path())
        .env(rtvirt_analysis::emit::pid_variable(name), "4194305")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(&format!("guest {name}: no thread 4194305")) || e.contains("run as root"), "{e}");
    let made: Vec<_> = std::fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(made, ["deploy.sh"], "nothing but the script in the directory");
    let work = tempfile::tempdir().unwrap();
    let rtds = run_script(work.path(), &emitted(&["--import-carts", x], "rtds", &[]), &[]);
    no_injection(&rtds);
    assert!(rtds.iter().any(|(_, a)| a == &["cpupool-migrate", name, "rtvirt-core0"]), "{rtds:?}");
}

#[test]
fn libvirt_and_carts_output_escape_names_as_xml() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    let names = ["<x>&\"'", "--a--", "vm\ntouch x\n#"];
    std::fs::write(&file, scenario(&names)).unwrap();
    let f = file.to_str().unwrap();
    // libvirt domain names hold no newline (its schema): a tab instead
    let out = dir.path().join("libvirt");
    let libvirt_names = ["<x>&\"'", "--a--", "vm\ttouch x #"];
    let libvirt_scenario = dir.path().join("libvirt.toml");
    std::fs::write(&libvirt_scenario, scenario(&libvirt_names)).unwrap();
    emitted(&[libvirt_scenario.to_str().unwrap()], "libvirt", &["--output-dir", out.to_str().unwrap()]);
    for (i, name) in libvirt_names.iter().enumerate() {
        let file = ["_x____.xml", "--a--.xml", "vm_touch_x__.xml"][i];
        let libvirt = std::fs::read_to_string(out.join(file)).unwrap();
        let doc = roxmltree::Document::parse(&libvirt).unwrap_or_else(|e| panic!("{e}: {libvirt}"));
        assert_eq!(doc.descendants().find(|n| n.has_tag_name("name")).unwrap().text(), Some(*name));
    }
    let carts = emitted(&[f], "carts", &[]);
    let parsed = roxmltree::Document::parse(&carts).unwrap_or_else(|e| panic!("{e}: {carts}"));
    let got: Vec<&str> =
        parsed.descendants().filter(|n| n.has_tag_name("component")).map(|n| n.attribute("name").unwrap()).collect();
    assert_eq!(got, names);
    // and the CARTS output imports back with the same names
    let back = dir.path().join("back.xml");
    std::fs::write(&back, &carts).unwrap();
    let o = rtvirt(&["plan", "--import-carts", back.to_str().unwrap(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names_back: Vec<&str> = v["guests"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names_back, names);
}

#[test]
fn unusable_names_are_refused_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, scenario(&["vm-1", "vm_1"])).unwrap();
    let o = rtvirt(&["plan", file.to_str().unwrap(), "--emit", "chrt"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("guest[1].name") && e.contains("VCPU_PID_VM_1") && e.contains("--pid"), "{e}");
    let o = rtvirt(&["plan", file.to_str().unwrap(), "--emit", "chrt", "--pid", "vm-1=7"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));

    std::fs::write(&file, scenario(&["a\0b"])).unwrap();
    let o = rtvirt(&["plan", file.to_str().unwrap(), "--emit", "rtds"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("guest[0].name") && e.contains("NUL"), "{e}");

    std::fs::write(&file, scenario(&["-h"])).unwrap();
    let o = rtvirt(&["plan", file.to_str().unwrap(), "--emit", "rtds"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("s.toml") && e.contains("guest[0].name") && e.contains("option"), "{e}");
}
