//! The exact per-core admission test `host apply` and `host adapt` hand to rtvirt-host: the EDF
//! processor-demand test of rtvirt-analysis (Baruah, Rosier & Howell 1990) on a dedicated core.

use rtvirt_host::apply::{Admission, Server};

pub(crate) struct ExactEdf;

impl Admission for ExactEdf {
    fn name(&self) -> &str {
        "exact EDF demand test (rtvirt-analysis)"
    }
    fn admit(&self, servers: &[Server]) -> Result<(), String> {
        use rtvirt_analysis::dbf::Sporadic;
        let tasks: Vec<Sporadic> =
            servers.iter().map(|s| Sporadic { c: s.runtime_ns, d: s.deadline_ns, t: s.period_ns }).collect();
        if rtvirt_analysis::schedtest::edf_schedulable(&tasks, &rtvirt_analysis::sbf::Dedicated) {
            Ok(())
        } else {
            Err("the servers' demand exceeds the core in some interval (dbf_EDF(t) > t)".into())
        }
    }
}
