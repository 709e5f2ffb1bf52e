//! Assembling a report from loaded inputs: a verdict (plan -> simulated -> measured misses) when
//! there is one to give, an overview of the inputs and their settings, then one section per kind
//! of content found (latency families, tasks, predicted against measured response times, plans,
//! network segments, adapted reservations, DSR per window, time series, environment). Sections with nothing to show are left out.

mod adaptation;
pub mod compare;
mod environment;
mod explain;
pub(crate) mod latency;
pub mod limits;
mod network;
mod overview;
mod plan;
mod prediction;
mod segments;
mod tail_fit;
mod tasks;
mod timeline;
mod windows;

pub use tasks::dsr_versus_rho_section;

use crate::doc::{Report, Section};
use crate::input::Input;

/// The whole report for these inputs (the first result of each comparison is its baseline).
pub fn build_report(title: &str, inputs: &[Input]) -> Report {
    let mut sections: Vec<Section> = overview::verdict(inputs).into_iter().collect();
    sections.push(overview::inputs(inputs));
    sections.extend(plan::sections(inputs));
    sections.extend(tasks::section(inputs));
    sections.extend(prediction::section(inputs));
    sections.extend(latency::sections(inputs));
    sections.extend(explain::section(inputs));
    sections.extend(network::section(inputs));
    sections.extend(adaptation::section(inputs));
    sections.extend(windows::section(inputs));
    sections.extend(timeline::section(inputs));
    sections.extend(environment::section(inputs));
    Report { title: title.to_string(), sections }
}
