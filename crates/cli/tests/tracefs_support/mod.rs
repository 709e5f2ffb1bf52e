//! Shared by the `measure ... --explain` tests: rtvirt's tracing instances present now.

/// Names of the `rtvirt-*` tracing instances under the mounted tracefs (none when unmounted).
pub fn rtvirt_instances() -> Vec<String> {
    let Some(root) = rtvirt_os::tracefs::mounted_at() else { return Vec::new() };
    std::fs::read_dir(root.join("instances"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("rtvirt-"))
                .collect()
        })
        .unwrap_or_default()
}
