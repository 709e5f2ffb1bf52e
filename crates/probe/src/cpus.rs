//! CPU lists ("0-3,6") as `Vec<u32>`: parsing and formatting through rtvirt-os's `CpuList`
//! (one parser for the project), checking against the CPUs this process may use.

use crate::error::{Error, Result};
use rtvirt_os::CpuList;

/// Parse a Linux CPU list ("1", "0-3,6", "0,2-3"); sorted, deduplicated, never empty.
pub fn parse_list(text: &str) -> std::result::Result<Vec<u32>, String> {
    let list = CpuList::parse(text)?;
    if list.is_empty() {
        return Err(format!("\"{text}\" is not a CPU list (expected e.g. \"1\", \"0-3\", \"0,2-3\")"));
    }
    Ok(list.iter().collect())
}

/// Format CPUs as a compact list ("0-3,6").
pub fn format_list(cpus: &[u32]) -> String {
    cpus.iter().copied().collect::<CpuList>().to_string()
}

/// CPUs the calling thread may run on (its affinity mask), ascending.
pub fn allowed() -> Vec<u32> {
    match rtvirt_os::sched::get_affinity(0) {
        Ok(list) => list.iter().collect(),
        Err(_) => online(),
    }
}

/// Online CPUs (/sys/devices/system/cpu/online).
pub fn online() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| parse_list(&t).ok())
        .unwrap_or_else(|| (0..std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1)).collect())
}

/// Parse `--cpus` and check every CPU exists and is allowed; None = every allowed CPU.
pub fn resolve(option: &str, text: Option<&str>) -> Result<Vec<u32>> {
    let allowed = allowed();
    let Some(text) = text else { return Ok(allowed) };
    let cpus = parse_list(text).map_err(|m| Error::input(option, m))?;
    if let Some(bad) = cpus.iter().find(|c| !allowed.contains(c)) {
        return Err(Error::input(
            option,
            format!("CPU {bad} does not exist or is not allowed here (usable CPUs: {})", format_list(&allowed)),
        ));
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_formats() {
        assert_eq!(parse_list("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_list(" 2,1,2 ").unwrap(), vec![1, 2]);
        assert_eq!(format_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        for bad in ["", " ", "a", "3-1", "-1", "1-", "1,x"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_cpu_is_an_input_error() {
        let e = resolve("--cpus", Some("4000")).unwrap_err();
        assert!(matches!(e, Error::Input(_)), "{e}");
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert_eq!(resolve("--cpus", None).unwrap(), allowed());
    }

    proptest! {
        #[test]
        fn format_parse_round_trip(v in proptest::collection::btree_set(0u32..64, 1..20)) {
            let v: Vec<u32> = v.into_iter().collect();
            prop_assert_eq!(parse_list(&format_list(&v)).unwrap(), v);
        }
    }
}
