//! This host, live: what the planner needs to know about the host it runs on.
//!
//! [`this_host`] is the model a plan for this host uses: the last calibration of this kernel,
//! boot and CPU (`rtvirt host calibrate` caches it as `<state_dir>/calibration/<key>.json`),
//! else [`HostModel::uncalibrated`] with the enforcement read from the kernel; in both cases the
//! admission limits (RT runtime/period, the deadline period limits, fair servers, isolated CPUs)
//! and the CPUs (online, `nohz_full`, device interrupts) are read live now. Reading needs no
//! root (fair servers unreadable without it are left unknown, as in the calibration).
//!
//! A cached calibration is planned with, so it is read only from a directory nobody but root or
//! this user can write ([`rtvirt_os::trust`], the rule of `rtvirt host`'s journal), and written
//! only where it is ours: a new file, or one of our cache files replaced atomically.

pub use crate::live::{live_cpus, CacheKey};
use rtvirt_model::hostmodel::HostModel;
use rtvirt_os::trust;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The cache's directory under the state directory.
pub const CACHE_DIR: &str = "calibration";

/// The host a plan for "this host" is made for.
#[derive(Debug, Clone)]
pub struct ThisHost {
    pub model: HostModel,
    /// The cached calibration the model comes from; None: the uncalibrated defaults.
    pub calibration: Option<PathBuf>,
    /// Why a cached calibration was not used (untrusted, unreadable, another boot's), for stderr.
    pub notes: Vec<String>,
}

/// This host's cached calibration file (it may not exist).
pub fn cache_path(state_dir: &Path) -> PathBuf {
    state_dir.join(CACHE_DIR).join(CacheKey::now().file_name())
}

/// This host as a plan sees it (module doc).
pub fn this_host(state_dir: &Path) -> ThisHost {
    let path = cache_path(state_dir);
    let (mut model, calibration, notes) = match read_cache(&path) {
        Ok(Some(model)) => (model, Some(path), vec![]),
        Ok(None) => (uncalibrated_live(), None, vec![]),
        Err(why) => (uncalibrated_live(), None, vec![format!("cached calibration {} not used: {why}", path.display())]),
    };
    model.admission = crate::calibrate::admission_limits();
    model.cpus = live_cpus();
    let source = match &calibration {
        Some(p) => format!("this host: calibration {}, limits and CPUs read live", p.display()),
        None => "this host: uncalibrated defaults, enforcement, limits and CPUs read live".to_string(),
    };
    model.environment.insert("host".into(), source.into());
    ThisHost { model, calibration, notes }
}

/// The default model with this kernel's enforcement (HRTICK on: overrun up to the default
/// release latency's max, how late a timer interrupt may come; else a tick).
fn uncalibrated_live() -> HostModel {
    let mut m = HostModel::uncalibrated();
    let (enforcement, how) = crate::calibrate::live_enforcement(m.enforcement, m.release_latency_ns.max);
    m.enforcement = enforcement;
    m.environment = crate::calibrate::environment();
    m.environment.insert("enforcement".into(), how.into());
    m
}

/// The cached model at `path`: None when there is none; why not when it is there but not
/// trusted, not a host model, or not this kernel's, boot's and CPU's.
fn read_cache(path: &Path) -> Result<Option<HostModel>, String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
        Ok(_) => {}
    }
    check_trusted(dir, path)?;
    let model = HostModel::from_file(path).map_err(|e| e.to_string())?;
    if CacheKey::of(&model).as_ref() != Some(&CacheKey::now()) {
        return Err("its environment's kernel, boot_id and cpu_model are not this host's".into());
    }
    Ok(Some(model))
}

/// `dir` and every directory above it, and `path` in it, owned by root or us, writable by no one
/// else, `path` no symlink (module doc).
fn check_trusted(dir: &Path, path: &Path) -> Result<(), String> {
    let rule = "(rtvirt reads and writes a cached calibration only where no one but root or this user can write)";
    if let Some((d, why)) = trust::untrusted_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        return Err(format!("not trusted: {} {why} {rule}", d.display()));
    }
    if let Some(why) = trust::untrusted_entry(path).map_err(|e| format!("{}: {e}", path.display()))? {
        return Err(format!("not trusted: {} {why} {rule}", path.display()));
    }
    Ok(())
}

/// Cache `model` (a calibration of this host) as this kernel's, boot's and CPU's: created in a
/// new `<state_dir>/calibration` (mode 0700) if need be, replacing only an earlier cache file of
/// ours. Returns where it was written.
pub fn write_cache(state_dir: &Path, model: &HostModel) -> Result<PathBuf, String> {
    let key = CacheKey::now();
    if CacheKey::of(model).as_ref() != Some(&key) {
        return Err("the model's environment is not this host's kernel, boot and CPU".into());
    }
    let dir = state_dir.join(CACHE_DIR);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join(key.file_name());
    check_trusted(&dir, &path)?;
    if let Ok(m) = std::fs::symlink_metadata(&path) {
        let ours = m.is_file() && HostModel::from_file(&path).is_ok_and(|old| CacheKey::of(&old).is_some());
        if !ours {
            return Err(format!("{} is there and is not a cached calibration: not replaced", path.display()));
        }
    }
    let text = serde_json::to_string_pretty(model).map_err(|e| e.to_string())? + "\n";
    let tmp = dir.join(format!(".{}.{}.tmp", key.file_name(), std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {e}", path.display()));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A calibration of this host as `rtvirt host calibrate` makes it (figures made up).
    fn calibrated() -> HostModel {
        let mut m = HostModel::uncalibrated();
        m.context_switch_ns = 1234;
        m.environment = crate::calibrate::environment();
        m
    }

    #[test]
    fn this_host_reads_its_limits_and_cpus_live() {
        let state = tempfile::tempdir().unwrap();
        let h = this_host(state.path());
        assert_eq!(h.calibration, None);
        assert!(h.notes.is_empty(), "{:?}", h.notes);
        let a = &h.model.admission;
        // this host's kernel defaults
        assert_eq!((a.deadline_period_min_us, a.deadline_period_max_us), (100, 4_194_304));
        assert_eq!((a.rt_runtime_us, a.rt_period_us), (950_000, 1_000_000));
        assert_eq!(h.model.cpus.online, rtvirt_os::sysinfo::online_cpus().iter().collect::<Vec<_>>());
        assert!(!h.model.cpus.irqs.is_empty(), "this VM's virtio devices take interrupts");
        let hk = h.model.housekeeping();
        assert_eq!(hk[0].0, 0, "{hk:?}");
        assert!(hk[0].1.starts_with("housekeeping by convention"), "{hk:?}");
        // this VM's device interrupts may each go to any CPU (smp_affinity_list 0-1): they make
        // no CPU but 0 housekeeping
        assert!(h.model.cpus.irqs.iter().all(|i| i.movable()), "{:?}", h.model.cpus.irqs);
        assert_eq!(hk.len(), 1, "{hk:?}");
        // HZ = 250 and HRTICK unreadable here: a tick's overrun
        assert_eq!(h.model.enforcement.overrun_max_ns, 4_000_000);
        assert!(h.model.environment["host"].as_str().unwrap().contains("uncalibrated defaults"));
    }

    #[test]
    fn the_cache_is_written_reused_and_refused_when_others_can_write_it() {
        let state = tempfile::tempdir().unwrap();
        let path = write_cache(state.path(), &calibrated()).unwrap();
        assert_eq!(path, cache_path(state.path()));
        let dir = state.path().join(CACHE_DIR);
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        let h = this_host(state.path());
        assert_eq!(h.calibration.as_deref(), Some(path.as_path()));
        assert_eq!(h.model.context_switch_ns, 1234);
        // the limits are still read live
        assert_eq!(h.model.admission.deadline_period_min_us, 100);
        // rewritten: replaced (ours)
        let mut again = calibrated();
        again.context_switch_ns = 999;
        write_cache(state.path(), &again).unwrap();
        assert_eq!(this_host(state.path()).model.context_switch_ns, 999);
        // a group-writable cache directory: not read, not written
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
        let h = this_host(state.path());
        assert_eq!(h.calibration, None);
        assert_eq!(h.model.context_switch_ns, 3_000);
        assert!(h.notes[0].contains("writable by group or others"), "{:?}", h.notes);
        assert!(write_cache(state.path(), &again).unwrap_err().contains("not trusted"));
        // ... nor a group-writable state directory
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o775)).unwrap();
        assert_eq!(this_host(state.path()).calibration, None);
        std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        // a group-writable file
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o660)).unwrap();
        assert_eq!(this_host(state.path()).calibration, None);
    }

    #[test]
    fn other_files_and_other_boots_are_not_used_nor_replaced() {
        let state = tempfile::tempdir().unwrap();
        let dir = state.path().join(CACHE_DIR);
        std::fs::create_dir(&dir).unwrap();
        let path = cache_path(state.path());
        // not a host model: not used, not replaced
        std::fs::write(&path, "precious").unwrap();
        let h = this_host(state.path());
        assert_eq!(h.calibration, None);
        assert!(h.notes[0].contains(&path.display().to_string()), "{:?}", h.notes);
        assert!(write_cache(state.path(), &calibrated()).unwrap_err().contains("not replaced"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
        // another boot's model under this name: not used
        let mut other = calibrated();
        other.environment.insert("boot_id".into(), "another".into());
        std::fs::write(&path, serde_json::to_string(&other).unwrap()).unwrap();
        let h = this_host(state.path());
        assert_eq!(h.calibration, None);
        assert!(h.notes[0].contains("not this host's"), "{:?}", h.notes);
        // and a model that is not this host's is not cached
        assert!(write_cache(state.path(), &other).is_err());
        // a symlink is not followed
        std::fs::remove_file(&path).unwrap();
        let elsewhere = state.path().join("elsewhere.json");
        std::fs::write(&elsewhere, serde_json::to_string(&calibrated()).unwrap()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(this_host(state.path()).notes[0].contains("symlink"));
    }

    #[test]
    fn cache_file_names_are_plain() {
        let k = CacheKey { kernel: "6.18.0-rt".into(), boot_id: "ab-cd".into(), cpu_model: "AMD EPYC 7B13 / x".into() };
        assert_eq!(k.file_name(), "6.18.0-rt_ab-cd_AMD_EPYC_7B13___x.json");
        let evil = CacheKey { kernel: "../..".into(), boot_id: "/".into(), cpu_model: String::new() };
        assert!(!evil.file_name().contains('/'));
    }
}
