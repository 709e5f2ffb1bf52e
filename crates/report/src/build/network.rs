//! Network path section: simulated flow latencies and measured round trips on one exceedance
//! chart (when both are given), mean latency per segment (host receive / guest / host send)
//! stacked per flow and result, with a table of segment means and p99s, throughput and drops; the
//! segments measured by `measure net --explain` beside the simulated ones ([`super::segments`]).

use super::latency::exceedance_figure;
use super::limits::MAX_SERIES;
use crate::distribution::Distribution;
use crate::doc::{Cell, Figure, Section, Table};
use crate::extract::{latency_series, segment_order, LatencySeries, NET_FAMILY};
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
    let measured = super::segments::measured(inputs);
    if all.is_empty() && measured.is_empty() {
        return None;
    }
    let with_segments: Vec<_> = all.iter().copied().filter(|(_, f)| !f.segments_ns.is_empty()).collect();
    let segments = segment_order(with_segments.iter().flat_map(|(_, f)| f.segments_ns.keys()));
    let mut sec = Section::new("Network path: latency per segment");
    if let Some(f) = simulated_and_measured_figure(inputs) {
        sec.figure(f);
    }
    if !with_segments.is_empty() {
        sec.figure(segment_figure(&with_segments, &segments));
    }
    if let Some(f) = super::segments::figure(&all, &measured) {
        sec.figure(f);
    }
    if !all.is_empty() {
        sec.table(flow_table(&all, &segments));
    }
    if let Some(t) = super::segments::table(&measured) {
        sec.table(t);
    }
    for (name, limitation) in super::segments::limitations(inputs) {
        sec.note(format!("{name}: not explained: {limitation}"));
    }
    Some(sec)
}

/// Simulated flow latencies and measured round trips of the path on one exceedance chart, when
/// the inputs hold both (a network simulation and `measure net`).
fn simulated_and_measured_figure(inputs: &[Input]) -> Option<Figure> {
    let series = latency_series(inputs);
    let simulated: Vec<&LatencySeries> = series.iter().filter(|s| s.family.starts_with("Flow ")).collect();
    let measured: Vec<&LatencySeries> = series.iter().filter(|s| s.family == NET_FAMILY).collect();
    if simulated.is_empty() || measured.is_empty() {
        return None;
    }
    let both: Vec<&LatencySeries> = simulated.into_iter().chain(measured).take(MAX_SERIES).collect();
    let named: Vec<(String, &rtvirt_model::stats::Summary)> = both
        .iter()
        .map(|s| {
            let what = s.family.strip_prefix("Flow ").and_then(|f| f.strip_suffix(": end-to-end latency"));
            let name = what.map_or(format!("{} (measured)", s.name), |flow| format!("{} / {flow} (simulated)", s.name));
            (name, s.summary)
        })
        .collect();
    let dists: Vec<Distribution> = both.iter().map(|s| Distribution::of(s.summary, s.buckets.clone())).collect();
    let mut f = exceedance_figure("Simulated flow latency and measured round trip", &named, &dists, Vec::new());
    f.caption = format!(
        "The path as simulated (each flow's end-to-end latency) and as measured \
        (request/response round trip), on one chart. {}",
        f.caption
    );
    Some(f)
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
fn throughput(flow: &FlowResult) -> String {
    let Some(b) = flow.throughput_bps else { return "-".into() };
    let rate = flow.requests_per_s.map_or(String::new(), |r| format!(" ({r:.1} req/s)"));
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
