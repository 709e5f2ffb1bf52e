//! `CpuList`: a set of CPU numbers in the kernel's list format ("0-3,8,10-11"), as used by
//! /sys/devices/system/cpu/*, /proc/irq/*/smp_affinity_list, cpuset.cpus and taskset -c.
//!
//! Parsing also accepts the two strided forms: `a-b:s` (every s-th CPU from a to b, taskset's
//! form from util-linux `cpulist_parse`: "0-7:2" = 0,2,4,6) and the kernel's group form
//! `a-b:used/group` (`bitmap_parselist`: in each group of `group` CPUs from a, the first `used`;
//! "0-7:2/4" = 0,1,4,5). Written by hand: no crate parses these forms (the kernel's own rules are
//! followed: a <= b, group >= 1, used <= group). Display always prints plain ranges.

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
            let (range, pattern) = match part.split_once(':') {
                Some((range, pattern)) => (range, Some(pattern)),
                None => (part, None),
            };
            let bad_range = || format!("\"{text}\": bad CPU range {part}");
            let (a, b) = match range.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None if pattern.is_none() => {
                    set.insert(num(range)?);
                    continue;
                }
                None => return Err(bad_range()),
            };
            if a > b || b - a > 65_535 {
                return Err(bad_range());
            }
            let (used, group) = match pattern.map(|p| p.split_once('/')) {
                None => (1, 1),
                Some(None) => (1, num(pattern.unwrap_or_default())?),
                Some(Some((used, group))) => (num(used)?, num(group)?),
            };
            if group == 0 || used > group {
                return Err(bad_range());
            }
            set.extend((a..=b).filter(|cpu| (cpu - a) % group < used));
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

    #[test]
    fn parses_strided_forms() {
        let cpus = |t: &str| CpuList::parse(t).unwrap().iter().collect::<Vec<_>>();
        assert_eq!(cpus("0-7:2"), vec![0, 2, 4, 6]);
        assert_eq!(cpus("0-7:2/4"), vec![0, 1, 4, 5]);
        assert_eq!(cpus("100-200:2/25"), vec![100, 101, 125, 126, 150, 151, 175, 176, 200]);
        assert_eq!(cpus("1,8-9:1/1"), vec![1, 8, 9]);
        for bad in ["0-7:0", "0-7:3/2", "0-7:1/0", "3:1", "0-7:", "0-7:a/2", "7-0:2"] {
            assert!(CpuList::parse(bad).is_err(), "{bad}");
        }
    }

    /// Every CPU of `a..=b` tested one by one against the definition of the form.
    fn brute_force(a: u32, b: u32, keep: impl Fn(u32) -> bool) -> CpuList {
        let mut set = BTreeSet::new();
        let mut cpu = a;
        while cpu <= b {
            if keep(cpu) {
                set.insert(cpu);
            }
            cpu += 1;
        }
        CpuList(set)
    }

    proptest! {
        #[test]
        fn stride_form_is_every_sth_cpu(a in 0u32..300, len in 0u32..300, stride in 1u32..20) {
            let b = a + len;
            let expected = brute_force(a, b, |cpu| (cpu - a) % stride == 0);
            prop_assert_eq!(CpuList::parse(&format!("{a}-{b}:{stride}")).unwrap(), expected);
        }

        #[test]
        fn group_form_is_the_first_used_of_each_group(
            a in 0u32..300, len in 0u32..300, group in 1u32..20, used_share in 0.0f64..=1.0
        ) {
            let (b, used) = (a + len, (used_share * group as f64) as u32);
            // The kernel's bitmap_set_region: from a in steps of group, min(used, rest) bits each.
            let mut expected = BTreeSet::new();
            let mut start = a;
            while start <= b {
                expected.extend(start..start + used.min(b - start + 1));
                start += group;
            }
            prop_assert_eq!(&CpuList::parse(&format!("{a}-{b}:{used}/{group}")).unwrap(), &CpuList(expected));
            let brute = brute_force(a, b, |cpu| (cpu - a) % group < used);
            prop_assert_eq!(CpuList::parse(&format!("{a}-{b}:{used}/{group}")).unwrap(), brute);
        }

        #[test]
        fn display_parse_round_trip(cpus in proptest::collection::btree_set(0u32..64, 0..20)) {
            let l = CpuList(cpus);
            prop_assert_eq!(CpuList::parse(&l.to_string()).unwrap(), l);
        }
    }
}
