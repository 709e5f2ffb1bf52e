//! `CpuList`: a set of CPU numbers in the kernel's list format ("0-3,8,10-11"), as used by
//! /sys/devices/system/cpu/*, /proc/irq/*/smp_affinity_list, cpuset.cpus and taskset -c.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeSet;
use std::fmt;

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuList(pub BTreeSet<u32>);

impl CpuList {
    /// Parse the kernel list format; empty text (or only whitespace) is the empty set.
    pub fn parse(text: &str) -> Result<CpuList, String> {
        let mut set = BTreeSet::new();
        for part in text.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let num = |s: &str| {
                s.trim().parse::<u32>().map_err(|_| format!("\"{text}\" is not a CPU list (expected e.g. \"0-3,6\")"))
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b || b - a > 65_535 {
                        return Err(format!("\"{text}\": bad CPU range {part}"));
                    }
                    set.extend(a..=b);
                }
                None => {
                    set.insert(num(part)?);
                }
            }
        }
        Ok(CpuList(set))
    }

    pub fn single(cpu: u32) -> CpuList {
        CpuList(BTreeSet::from([cpu]))
    }
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }
    pub fn intersection(&self, other: &CpuList) -> CpuList {
        CpuList(self.0.intersection(&other.0).copied().collect())
    }
    pub fn difference(&self, other: &CpuList) -> CpuList {
        CpuList(self.0.difference(&other.0).copied().collect())
    }
    pub fn is_subset(&self, other: &CpuList) -> bool {
        self.0.is_subset(&other.0)
    }
}

impl FromIterator<u32> for CpuList {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        CpuList(iter.into_iter().collect())
    }
}

impl fmt::Display for CpuList {
    /// Compact ranges: {0,1,2,5} -> "0-2,5"; the empty set -> "".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v: Vec<u32> = self.iter().collect();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            parts.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
            i = j + 1;
        }
        f.write_str(&parts.join(","))
    }
}

impl Serialize for CpuList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for CpuList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        CpuList::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_kernel_format() {
        assert_eq!(CpuList::parse("0-2,5\n").unwrap().iter().collect::<Vec<_>>(), vec![0, 1, 2, 5]);
        assert!(CpuList::parse("").unwrap().is_empty());
        assert!(CpuList::parse("3-1").is_err());
        assert!(CpuList::parse("x").is_err());
    }

    proptest! {
        #[test]
        fn display_parse_round_trip(cpus in proptest::collection::btree_set(0u32..64, 0..20)) {
            let l = CpuList(cpus);
            prop_assert_eq!(CpuList::parse(&l.to_string()).unwrap(), l);
        }
    }
}
