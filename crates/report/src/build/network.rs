//! Network path section: mean latency per segment (host receive / guest / host send) stacked
//! per flow and result, with a table of segment means and p99s, throughput and drops.

use crate::doc::{Cell, Figure, Section, Table};
use crate::extract::segment_order;
use crate::input::Input;
use crate::svg::bars::{BarChart, BarMode};
use crate::units::{fmt_bps, fmt_ns};
use rtvirt_model::results::FlowResult;
use rtvirt_model::results::Segment;

/// (result name, flow) for every flow with segments.
fn flows(inputs: &[Input]) -> Vec<(&str, &FlowResult)> {
    inputs
        .iter()
        .filter_map(|i| i.results().map(|r| (i.name.as_str(), r)))
        .flat_map(|(n, r)| r.flows.iter().map(move |f| (n, f)))
        .collect()
}

pub fn section(inputs: &[Input]) -> Option<Section> {
    let all = flows(inputs);
    if all.is_empty() {
        return None;
    }
    let with_segments: Vec<_> = all.iter().copied().filter(|(_, f)| !f.segments_ns.is_empty()).collect();
    let segments = segment_order(with_segments.iter().flat_map(|(_, f)| f.segments_ns.keys()));
    let mut sec = Section::new("Network path: latency per segment");
    if !with_segments.is_empty() {
        sec.figure(segment_figure(&with_segments, &segments));
    }
    sec.table(flow_table(&all, &segments));
    Some(sec)
}

fn segment_figure(flows: &[(&str, &FlowResult)], segments: &[String]) -> Figure {
    let chart = BarChart {
        kind: "segments",
        title: "Mean latency per segment".into(),
        y_label: "mean latency".into(),
        y_fmt: fmt_ns,
        mode: BarMode::Stacked,
        categories: flows.iter().map(|(n, f)| format!("{n} / {}", f.name)).collect(),
        series: segments.to_vec(),
        values: flows
            .iter()
            .map(|(_, f)| segments.iter().map(|s| f.segments_ns.get(s).and_then(Segment::mean)).collect())
            .collect(),
        reference: None,
        y_range: None,
    };
    Figure {
        kind: "segments",
        title: chart.title.clone(),
        caption: "Host receive: NIC IRQ to VM entry; guest: VM entry to the VM exit sending the response; host send: \
                  to the wire (Garcia Alvarado 2019)."
            .into(),
        svg: chart.render(),
    }
}

/// A flow's throughput in the unit that fits (a request/response flow carries kb/s, a bulk one
/// Gb/s), with its request rate when it has one.
fn throughput(f: &FlowResult) -> String {
    let Some(b) = f.throughput_bps else { return "-".into() };
    let rate = f.requests_per_s.map_or(String::new(), |r| format!(" ({r:.1} req/s)"));
    format!("{}{rate}", fmt_bps(b))
}

fn flow_table(flows: &[(&str, &FlowResult)], segments: &[String]) -> Table {
    let mut header: Vec<String> = vec!["result".into(), "flow".into(), "mean".into(), "p99".into()];
    header.extend(segments.iter().map(|s| format!("{s} mean / p99")));
    header.extend(["throughput".into(), "drops".into()]);
    let mut t = Table { caption: "Flows".into(), header, rows: Vec::new() };
    for (name, f) in flows {
        let lat =
            |k: fn(&rtvirt_model::stats::Summary) -> f64| f.latency_ns.as_ref().map_or("-".into(), |s| fmt_ns(k(s)));
        let mut row = vec![
            Cell::plain(*name),
            Cell::plain(f.name.clone()),
            Cell::plain(lat(|s| s.mean)),
            Cell::plain(lat(|s| s.p99 as f64)),
        ];
        for s in segments {
            let v = f.segments_ns.get(s);
            let stat = |k: fn(&Segment) -> Option<f64>| v.and_then(k).map_or("-".into(), fmt_ns);
            row.push(Cell::plain(format!("{} / {}", stat(Segment::mean), stat(Segment::p99))));
        }
        row.push(Cell::plain(throughput(f)));
        row.push(Cell::plain(f.drops.to_string()));
        t.row(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_takes_the_unit_that_fits_and_the_request_rate() {
        let mut f: FlowResult =
            serde_json::from_str(r#"{"name":"rt","drops":0,"throughput_bps":18830000000.0}"#).unwrap();
        assert_eq!(throughput(&f), "18.83 Gb/s");
        f.throughput_bps = Some(2_048.0);
        f.requests_per_s = Some(181.8);
        assert_eq!(throughput(&f), "2.05 kb/s (181.8 req/s)");
        f.throughput_bps = None;
        assert_eq!(throughput(&f), "-");
    }
}
