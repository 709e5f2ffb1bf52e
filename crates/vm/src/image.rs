//! The guest image: a Debian kernel plus an initramfs (cpio "newc", uncompressed: fastest to
//! build and to unpack under TCG) holding static busybox, the `/init` of [`crate::init`], the
//! kernel modules of [`crate::modules::GUEST_MODULES`] and, optionally, a payload program (the
//! rtvirt binary) with the shared libraries `ldd` reports for it, at their host paths.
//!
//! Images are cached in `<cache>/images/<flavour>/initramfs-<key>.cpio`, where the key hashes
//! every input (init script, busybox, kernel, modules, payload and its libraries, layout version);
//! an image is rebuilt only when one of them changes. The archive is written by Debian's `cpio`.
//!
//! The payload is the running, dynamically linked binary (debug info stripped), not a static
//! build, deliberately: the guest must run exactly the binary of the host command (same options,
//! same results schema), and a static build (`+crt-static` with Debian's `libc.a`; no musl target
//! is installed) is a second compilation of the whole workspace in its own target directory that
//! `cargo test` would have to keep in step with the tested binary. The binary and its four
//! libraries (libc, libm, libgcc_s, the loader) add about 3 MiB.

use crate::error::{Result, VmError};
use crate::kernel::{Flavour, Kernel};
use crate::modules;
use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Bumped when the layout of the initramfs changes (invalidates cached images).
const LAYOUT_VERSION: &str = "rtvirt-vm-image/1";
/// Where static busybox lives on Debian (package busybox-static).
pub const BUSYBOX: &str = "/bin/busybox";
/// How many cached images to keep per flavour.
const KEEP_IMAGES: usize = 4;

/// What goes into an image.
#[derive(Debug, Clone)]
pub struct ImageSpec {
    pub kernel: Kernel,
    /// Installed as `/bin/rtvirt` (debug info stripped) with its shared libraries.
    pub payload: Option<PathBuf>,
    /// The `/init` script (normally [`crate::init::INIT_SCRIPT`]).
    pub init_script: String,
    pub busybox: PathBuf,
}

impl ImageSpec {
    /// The standard image of `flavour` from the cache, carrying `payload`.
    pub fn standard(cache: &Path, flavour: Flavour, payload: Option<PathBuf>) -> Result<ImageSpec> {
        Ok(ImageSpec {
            kernel: Kernel::locate(cache, flavour)?,
            payload,
            init_script: crate::init::INIT_SCRIPT.to_string(),
            busybox: PathBuf::from(BUSYBOX),
        })
    }
}

/// A built (or reused) image.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Image {
    pub flavour: Flavour,
    pub kernel_version: String,
    pub vmlinuz: PathBuf,
    pub initramfs: PathBuf,
    /// Hex hash of every input.
    pub key: String,
    pub size_bytes: u64,
    /// False when a cached image with the same key was reused.
    pub rebuilt: bool,
    pub modules: Vec<String>,
}

/// One file of the initramfs: where it comes from, where it goes, and how.
#[derive(Debug, Clone)]
struct Entry {
    src: Source,
    dest: String,
    mode: u32,
}

#[derive(Debug, Clone)]
enum Source {
    File(PathBuf),
    /// A program installed without debug info.
    Stripped(PathBuf),
    Text(String),
}

/// Build the image described by `spec` in `cache`, or reuse the cached one with the same inputs.
pub fn build(cache: &Path, spec: &ImageSpec) -> Result<Image> {
    let mods = modules::resolve(&spec.kernel.modules_dir, modules::GUEST_MODULES)?;
    let entries = layout(spec, &mods)?;
    let key = format!("{:016x}", input_key(spec, &entries)?);
    let dir = cache.join("images").join(spec.kernel.flavour.name());
    std::fs::create_dir_all(&dir).map_err(|e| VmError::io(format!("creating {}", dir.display()), e))?;
    let initramfs = dir.join(format!("initramfs-{key}.cpio"));
    let rebuilt = !initramfs.is_file();
    if rebuilt {
        write_cpio(&dir, &initramfs, &entries)?;
        prune(&dir, &initramfs);
    } else {
        mark_used(&initramfs);
    }
    let size_bytes =
        std::fs::metadata(&initramfs).map_err(|e| VmError::io(format!("reading {}", initramfs.display()), e))?.len();
    Ok(Image {
        flavour: spec.kernel.flavour,
        kernel_version: spec.kernel.version.clone(),
        vmlinuz: spec.kernel.vmlinuz.clone(),
        initramfs,
        key,
        size_bytes,
        rebuilt,
        modules: mods.into_iter().map(|m| m.name).collect(),
    })
}

/// Every file of the image.
fn layout(spec: &ImageSpec, mods: &[modules::Module]) -> Result<Vec<Entry>> {
    check_static(&spec.busybox)?;
    let mut entries = vec![
        Entry { src: Source::Text(spec.init_script.clone()), dest: "init".into(), mode: 0o755 },
        Entry { src: Source::File(spec.busybox.clone()), dest: "bin/busybox".into(), mode: 0o755 },
    ];
    let list: String = mods.iter().map(|m| format!("{}.ko\n", m.name)).collect();
    entries.push(Entry { src: Source::Text(list), dest: "etc/rtvirt/modules".into(), mode: 0o644 });
    for m in mods {
        entries.push(Entry {
            src: Source::File(m.path.clone()),
            dest: format!("lib/modules/{}.ko", m.name),
            mode: 0o644,
        });
    }
    if let Some(p) = &spec.payload {
        entries.push(Entry { src: Source::Stripped(p.clone()), dest: "bin/rtvirt".into(), mode: 0o755 });
        for lib in shared_libraries(p)? {
            let dest = lib.to_string_lossy().trim_start_matches('/').to_string();
            entries.push(Entry { src: Source::File(lib), dest, mode: 0o755 });
        }
    }
    Ok(entries)
}

/// busybox must be the static one: the image has no libc for it.
fn check_static(busybox: &Path) -> Result<()> {
    if !busybox.is_file() {
        return Err(VmError::ToolMissing {
            tool: busybox.display().to_string(),
            package: "busybox-static".into(),
            why: "no such file".into(),
        });
    }
    if !shared_libraries(busybox)?.is_empty() {
        return Err(VmError::ToolMissing {
            tool: "static busybox".into(),
            package: "busybox-static".into(),
            why: format!("{} is dynamically linked", busybox.display()),
        });
    }
    Ok(())
}

/// The shared libraries (and the dynamic loader) a program needs, as `ldd` resolves them.
pub fn shared_libraries(program: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd").arg(program).output().map_err(|e| VmError::ToolMissing {
        tool: "ldd".into(),
        package: "libc-bin".into(),
        why: e.to_string(),
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("not a dynamic executable")
        || String::from_utf8_lossy(&out.stderr).contains("not a dynamic executable")
        || text.contains("statically linked")
    {
        return Ok(Vec::new());
    }
    if !out.status.success() {
        return Err(VmError::Image(format!(
            "ldd {} failed: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    parse_ldd(&text).map_err(|line| VmError::Image(format!("ldd {}: unresolved library: {line}", program.display())))
}

/// Library paths from `ldd` output; an unresolved library is returned as the error.
fn parse_ldd(text: &str) -> std::result::Result<Vec<PathBuf>, String> {
    let mut libs = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.trim(),
            None => line,
        };
        let path = path.split(" (").next().unwrap_or("").trim();
        if path == "not found" {
            return Err(line.to_string());
        }
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

/// FNV-1a over every input, in layout order.
fn input_key(spec: &ImageSpec, entries: &[Entry]) -> Result<u64> {
    let mut h = fnv::FnvHasher::default();
    h.write(LAYOUT_VERSION.as_bytes());
    h.write(&read(&spec.kernel.vmlinuz)?);
    for e in entries {
        h.write(e.dest.as_bytes());
        h.write_u32(e.mode);
        match &e.src {
            Source::Text(t) => h.write(t.as_bytes()),
            Source::File(p) | Source::Stripped(p) => h.write(&read(p)?),
        }
    }
    Ok(h.finish())
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| VmError::io(format!("reading {}", path.display()), e))
}

/// Stage the entries in a scratch directory next to `out` and archive them with `cpio -H newc`.
fn write_cpio(dir: &Path, out: &Path, entries: &[Entry]) -> Result<()> {
    let stage = dir.join(format!("stage-{}", unique_suffix()));
    let _ = std::fs::remove_dir_all(&stage);
    let result = stage_and_archive(&stage, out, entries);
    let _ = std::fs::remove_dir_all(&stage);
    result
}

fn stage_and_archive(stage: &Path, out: &Path, entries: &[Entry]) -> Result<()> {
    let mut names: Vec<String> =
        ["dev", "proc", "sys", "tmp", "run", "etc", "root"].iter().map(|s| s.to_string()).collect();
    for e in entries {
        let dest = stage.join(&e.dest);
        let parent = dest.parent().expect("entries are below the stage");
        std::fs::create_dir_all(parent).map_err(|err| VmError::io(format!("creating {}", parent.display()), err))?;
        install(&e.src, &dest)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(e.mode))
            .map_err(|err| VmError::io(format!("chmod {}", dest.display()), err))?;
    }
    for d in &names {
        std::fs::create_dir_all(stage.join(d)).map_err(|err| VmError::io(format!("creating {d} in stage"), err))?;
    }
    names.clear();
    collect_paths(stage, stage, &mut names)?;
    names.sort();
    let tmp = out.with_extension(format!("tmp-{}", unique_suffix()));
    let file = std::fs::File::create(&tmp).map_err(|e| VmError::io(format!("creating {}", tmp.display()), e))?;
    let mut child = Command::new("cpio")
        .args(["--create", "--format=newc", "--quiet", "--owner=0:0"])
        .current_dir(stage)
        .stdin(Stdio::piped())
        .stdout(file)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| VmError::ToolMissing { tool: "cpio".into(), package: "cpio".into(), why: e.to_string() })?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(names.join("\n").as_bytes())
        .map_err(|e| VmError::io("writing the cpio file list", e))?;
    let done = child.wait_with_output().map_err(|e| VmError::io("waiting for cpio", e))?;
    if !done.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(VmError::Image(format!("cpio failed: {}", String::from_utf8_lossy(&done.stderr).trim())));
    }
    std::fs::rename(&tmp, out).map_err(|e| VmError::io(format!("renaming {}", tmp.display()), e))
}

/// Put one entry's content at `dest`.
fn install(src: &Source, dest: &Path) -> Result<()> {
    match src {
        Source::Text(t) => std::fs::write(dest, t).map_err(|e| VmError::io(format!("writing {}", dest.display()), e)),
        Source::File(p) => {
            std::fs::copy(p, dest).map(|_| ()).map_err(|e| VmError::io(format!("copying {}", p.display()), e))
        }
        Source::Stripped(p) => {
            let stripped = Command::new("strip").arg("--strip-debug").arg("-o").arg(dest).arg(p).status();
            match stripped {
                Ok(s) if s.success() => Ok(()),
                _ => install(&Source::File(p.clone()), dest),
            }
        }
    }
}

/// Paths below `root`, relative, directories included.
fn collect_paths(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| VmError::io(format!("reading {}", dir.display()), e))?;
    for e in entries.filter_map(|e| e.ok()) {
        let p = e.path();
        out.push(p.strip_prefix(root).expect("below root").to_string_lossy().into_owned());
        if p.is_dir() {
            collect_paths(root, &p, out)?;
        }
    }
    Ok(())
}

/// Remove staging directories and partial archives of builds whose process died (killed mid-build).
fn remove_stale_stages(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for p in entries.filter_map(|e| e.ok()).map(|e| e.path()) {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let owner = name.strip_prefix("stage-").or_else(|| name.split_once(".tmp-").map(|(_, rest)| rest));
        let Some(pid) = owner.and_then(|o| o.split('-').next()).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !crate::runtime::process_alive(pid) {
            let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        }
    }
}

/// `<pid>-<n>`: distinct for every build, also between threads of one process.
fn unique_suffix() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!("{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// Reusing an image makes it recent (pruning goes by last use).
fn mark_used(image: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(image) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

/// Images unused this long may be pruned (beyond the newest [`KEEP_IMAGES`]): one being booted
/// by another run is never removed under it.
const PRUNE_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

/// Keep the newest [`KEEP_IMAGES`] images of a flavour (and `keep` itself, and any used within
/// [`PRUNE_AFTER`]).
fn prune(dir: &Path, keep: &Path) {
    remove_stale_stages(dir);
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut images: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cpio") && p != keep)
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    images.sort();
    let excess = images.len().saturating_sub(KEEP_IMAGES - 1);
    let now = std::time::SystemTime::now();
    for (used, p) in images.into_iter().take(excess) {
        if now.duration_since(used).is_ok_and(|age| age > PRUNE_AFTER) {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_is_parsed() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(text).unwrap(),
            [PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"), PathBuf::from("/lib64/ld-linux-x86-64.so.2")]
        );
        assert!(parse_ldd("\tlibfoo.so.1 => not found\n").unwrap_err().contains("libfoo"));
    }

    #[test]
    fn leftovers_of_dead_builds_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = u32::MAX - 1;
        let me = std::process::id();
        for d in [format!("stage-{dead}-0"), format!("stage-{me}-0")] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        for f in [format!("initramfs-ab.tmp-{dead}-3"), format!("initramfs-ab.tmp-{me}-3"), "initramfs-ab.cpio".into()]
        {
            std::fs::write(dir.path().join(f), b"x").unwrap();
        }
        remove_stale_stages(dir.path());
        let mut left: Vec<String> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(
            left,
            ["initramfs-ab.cpio".to_string(), format!("initramfs-ab.tmp-{me}-3"), format!("stage-{me}-0")]
        );
    }

    #[test]
    fn a_dynamic_program_brings_its_libraries() {
        let libs = shared_libraries(Path::new("/bin/ls")).unwrap();
        assert!(libs.iter().any(|l| l.to_string_lossy().contains("libc.so")), "{libs:?}");
    }
}
