//! Guest images are rebuilt only when an input changes, and hold what the guest needs.

use rtvirt_vm::image::{self, ImageSpec};
use rtvirt_vm::{paths, Flavour};
use std::process::Command;

/// A fresh cache that shares the fetched kernels.
fn fresh_cache() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(paths::cache_dir().join("kernels"), dir.path().join("kernels")).unwrap();
    dir
}

#[test]
fn rebuilt_only_when_an_input_changes() {
    let cache = fresh_cache();
    let payload = cache.path().join("payload");
    std::fs::copy("/bin/true", &payload).unwrap();
    let mut spec = ImageSpec::standard(cache.path(), Flavour::Nrt, Some(payload.clone()))
        .expect("kernel package fetched by scripts/setup.sh");
    let first = image::build(cache.path(), &spec).unwrap();
    assert!(first.rebuilt);
    let again = image::build(cache.path(), &spec).unwrap();
    assert!(!again.rebuilt);
    assert_eq!(again.initramfs, first.initramfs);

    spec.init_script.push_str("# changed\n");
    let init_changed = image::build(cache.path(), &spec).unwrap();
    assert!(init_changed.rebuilt && init_changed.key != first.key);

    std::fs::copy("/bin/false", &payload).unwrap();
    let payload_changed = image::build(cache.path(), &spec).unwrap();
    assert!(payload_changed.rebuilt && payload_changed.key != init_changed.key);
}

#[test]
fn the_archive_holds_init_busybox_modules_payload_and_its_libraries() {
    let cache = fresh_cache();
    let spec = ImageSpec::standard(cache.path(), Flavour::Rt, Some("/bin/ls".into())).unwrap();
    let img = image::build(cache.path(), &spec).unwrap();
    assert_eq!(img.flavour, Flavour::Rt);
    assert!(img.modules.iter().any(|m| m == "virtio_net") && img.modules.iter().any(|m| m == "virtio_pci"));
    let list = Command::new("cpio").args(["-t", "--quiet", "-F"]).arg(&img.initramfs).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    for f in [
        "init",
        "bin/busybox",
        "bin/rtvirt",
        "etc/rtvirt/modules",
        "lib/modules/virtio_net.ko",
        "lib/modules/virtio_ring.ko",
        "dev",
        "proc",
        "sys",
        "tmp",
    ] {
        assert!(list.lines().any(|l| l == f), "{f} missing from the image:\n{list}");
    }
    assert!(list.lines().any(|l| l.contains("libc.so")), "libc missing:\n{list}");
    // modules are listed dependencies first
    let idx = |m: &str| img.modules.iter().position(|x| x == m).unwrap();
    assert!(idx("virtio_ring") < idx("virtio_net") && idx("virtio") < idx("virtio_pci"));
}

#[test]
fn a_dynamic_busybox_is_refused() {
    let cache = fresh_cache();
    let mut spec = ImageSpec::standard(cache.path(), Flavour::Nrt, None).unwrap();
    spec.busybox = "/bin/ls".into();
    let e = image::build(cache.path(), &spec).unwrap_err().to_string();
    assert!(e.contains("dynamically linked") && e.contains("busybox-static"), "{e}");
}
