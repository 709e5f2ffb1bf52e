//! No command overwrites one of its own inputs (issue 36, item 11): an output file (`-o`), or a
//! file written into an output directory (`--output-dir`, `--keep`), that is an input - by name,
//! through a symbolic link or as the file a directory's emitted name lands on - is refused before
//! any work with exit 2 naming the option, and the input keeps its bytes.

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

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `args` exits 2 naming `option` and an input, and `input` still holds `content`.
fn refused(args: &[&str], option: &str, input: &Path, content: &str) {
    let o = rtvirt(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(option) && e.contains("is an input of this command"), "{args:?}: {e}");
    assert_eq!(std::fs::read_to_string(input).unwrap(), content, "{args:?}: the input is unchanged");
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn import_refuses_to_write_over_its_input_also_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let sample =
        std::fs::read_to_string(workspace().join("crates/import/tests/samples/netperf-tcp-rr-keyval.txt")).unwrap();
    let input = write(dir.path(), "x.txt", &sample);
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&input, &link).unwrap();
    refused(&["import", s(&input), "-o", s(&input)], "--output", &input, &sample);
    refused(&["import", s(&input), "-o", s(&link)], "--output", &input, &sample);
    // another file is written as before
    let out = dir.path().join("x.json");
    let o = rtvirt(&["import", s(&input), "-o", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(std::fs::read_to_string(&out).unwrap().contains("rtvirt.results/v1"));
}

const GUEST: &str = "[host]\ncores = 2\n[[guest]]\nname = \"vm1\"\nscheduler = \"edf\"\nserver_periods = [\"5ms\"]\n\
                     [[guest.task]]\nname = \"t\"\nperiod = \"50ms\"\nwcet = \"1ms\"\n";

#[test]
fn verify_keep_refuses_a_directory_holding_its_plan_as_a_kept_file() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "s.toml", GUEST);
    let o = rtvirt(&["plan", s(&scenario), "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let plan_text = String::from_utf8(o.stdout).unwrap();
    // the plan is saved under a name --keep writes (verify.json), in the --keep directory
    let plan = write(dir.path(), "verify.json", &plan_text);
    let args = ["verify", s(&scenario), "--plan", s(&plan), "--duration", "1s", "--keep", s(dir.path())];
    refused(&args, "--keep", &plan, &plan_text);
    // the scenario as measured.json, reached through --keep's directory
    let kept = dir.path().join("kept");
    std::fs::create_dir(&kept).unwrap();
    std::os::unix::fs::symlink(&scenario, kept.join("measured.json")).unwrap();
    let args = ["verify", s(&scenario), "--duration", "1s", "--keep", s(&kept)];
    refused(&args, "--keep", &scenario, GUEST);
}

#[test]
fn plan_output_dir_refuses_to_write_a_domain_over_the_libvirt_domain_it_patches() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "s.toml", GUEST);
    let domain_text = "<domain type='kvm'>\n  <name>vm1</name>\n  <vcpu>1</vcpu>\n</domain>\n";
    let domain = write(dir.path(), "vm1.xml", domain_text);
    let args =
        ["plan", s(&scenario), "--emit", "libvirt", "--libvirt-domain", s(&domain), "--output-dir", s(dir.path())];
    refused(&args, "--output-dir", &domain, domain_text);
    assert!(!dir.path().join("qemu").exists(), "nothing written");
    // into another directory it is patched as before
    let out = dir.path().join("out");
    let o =
        rtvirt(&["plan", s(&scenario), "--emit", "libvirt", "--libvirt-domain", s(&domain), "--output-dir", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(std::fs::read_to_string(out.join("vm1.xml")).unwrap().contains("<vcpupin"));
}

#[test]
fn plan_output_dir_refuses_to_write_carts_xml_over_the_carts_file_it_read() {
    let dir = tempfile::tempdir().unwrap();
    let carts_text = std::fs::read_to_string(workspace().join("scenarios/data/carts-example.xml")).unwrap();
    let carts = write(dir.path(), "carts.xml", &carts_text);
    let args = ["plan", "--import-carts", s(&carts), "--emit", "carts", "--output-dir", s(dir.path())];
    refused(&args, "--output-dir", &carts, &carts_text);
    // a scenario named like the emitted tuned profile
    let scenario = write(dir.path(), "tuned.conf", GUEST);
    refused(
        &["plan", s(&scenario), "--emit", "tuned", "--output-dir", s(dir.path())],
        "--output-dir",
        &scenario,
        GUEST,
    );
}
