//! Kernel modules the guest needs (the Debian cloud/rt kernels build virtio-pci and virtio-net as
//! modules), with their dependencies resolved from each module's `.modinfo` `depends=` entry, so
//! no `depmod`/`modinfo` is needed on the host. Written by hand because it is ~40 lines over the
//! ELF string table; no maintained crate reads `.modinfo` without loading the module.

use crate::error::{Result, VmError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Modules every guest image loads, in request order (dependencies are added before them).
/// `qemu_fw_cfg` exposes the job's files (fw_cfg entries) in sysfs; `virtio_console` the guest
/// agent's virtio-serial port.
pub const GUEST_MODULES: &[&str] = &["virtio_pci", "virtio_net", "qemu_fw_cfg", "virtio_console"];

/// A module to load in the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    pub name: String,
    pub path: PathBuf,
}

/// `wanted` and everything they depend on, dependencies first, each once.
pub fn resolve(modules_dir: &Path, wanted: &[&str]) -> Result<Vec<Module>> {
    let index = index(modules_dir)?;
    let mut order = Vec::new();
    for w in wanted {
        visit(&index, w, &mut order, &mut Vec::new())?;
    }
    Ok(order)
}

/// Module name -> file, over every `*.ko` below `modules_dir/kernel`.
fn index(modules_dir: &Path) -> Result<HashMap<String, PathBuf>> {
    let mut out = HashMap::new();
    let mut stack = vec![modules_dir.join("kernel")];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| VmError::io(format!("reading {}", dir.display()), e))?;
        for e in entries.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(stem) = p.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".ko")) {
                out.insert(normalise(stem), p);
            }
        }
    }
    Ok(out)
}

/// Module names use '_' and '-' interchangeably.
fn normalise(name: &str) -> String {
    name.replace('-', "_")
}

fn visit(index: &HashMap<String, PathBuf>, name: &str, order: &mut Vec<Module>, path: &mut Vec<String>) -> Result<()> {
    let name = normalise(name);
    if order.iter().any(|m| m.name == name) {
        return Ok(());
    }
    if path.contains(&name) {
        return Err(VmError::Image(format!("module dependency cycle: {} -> {name}", path.join(" -> "))));
    }
    let file = index.get(&name).ok_or_else(|| {
        VmError::Image(format!(
            "kernel module {name} not found (needed by {}); is the kernel package complete?",
            path.last().map_or("the guest", |s| s.as_str())
        ))
    })?;
    let bytes = std::fs::read(file).map_err(|e| VmError::io(format!("reading {}", file.display()), e))?;
    path.push(name.clone());
    for dep in depends_of(&bytes) {
        visit(index, &dep, order, path)?;
    }
    path.pop();
    order.push(Module { name, path: file.clone() });
    Ok(())
}

/// The `depends=a,b` entry of a module's `.modinfo` section (NUL-separated `key=value` strings).
pub fn depends_of(ko: &[u8]) -> Vec<String> {
    const KEY: &[u8] = b"\0depends=";
    let Some(start) = ko.windows(KEY.len()).position(|w| w == KEY).map(|i| i + KEY.len()) else {
        return Vec::new();
    };
    let end = ko[start..].iter().position(|&b| b == 0).map_or(ko.len(), |n| start + n);
    String::from_utf8_lossy(&ko[start..end]).split(',').filter(|s| !s.is_empty()).map(normalise).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depends_entry_is_parsed() {
        assert_eq!(
            depends_of(b"ELF...\0license=GPL\0depends=virtio,virtio_ring\0name=virtio_net\0"),
            vec!["virtio", "virtio_ring"]
        );
        assert_eq!(depends_of(b"\0depends=\0name=virtio\0"), Vec::<String>::new());
        assert_eq!(depends_of(b"no modinfo here"), Vec::<String>::new());
    }

    #[test]
    fn dependencies_come_first_once_and_cycles_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("kernel/drivers");
        std::fs::create_dir_all(&k).unwrap();
        std::fs::write(k.join("a.ko"), b"\0depends=b,c\0").unwrap();
        std::fs::write(k.join("b.ko"), b"\0depends=c\0").unwrap();
        std::fs::write(k.join("c.ko"), b"\0depends=\0").unwrap();
        std::fs::write(k.join("x-y.ko"), b"\0depends=x_y\0").unwrap();
        let names: Vec<String> = resolve(dir.path(), &["a", "b"]).unwrap().into_iter().map(|m| m.name).collect();
        assert_eq!(names, ["c", "b", "a"]);
        let e = resolve(dir.path(), &["x-y"]).unwrap_err().to_string();
        assert!(e.contains("cycle"), "{e}");
        let e = resolve(dir.path(), &["nope"]).unwrap_err().to_string();
        assert!(e.contains("module nope not found"), "{e}");
    }
}
