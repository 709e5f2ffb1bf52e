//! Measured path segments (`measure net --explain`, section `explain.segments`) beside the
//! simulator's (a network simulation's flows: host receive, guest, host send; Garcia Alvarado
//! 2019): the means of the three shared segments as grouped bars, one bar per simulated flow and
//! per measured result, and a table of every measured segment (mean, p99, max).

use crate::doc::{Cell, Figure, Table};
use crate::input::Input;
use crate::svg::bars::{BarChart, BarMode};
use crate::units::fmt_ns;
use rtvirt_model::results::{FlowResult, Segment, SegmentSummary};

/// (label, the simulator's segment, the measured segments drawn beside it: `guest` when the
/// server ran in a guest, `server` when it ran on the host or in a container).
const BESIDE: [(&str, &str, &[&str]); 3] = [
    ("host receive", "host_receive", &["host_receive"]),
    ("guest / server", "guest", &["guest", "server"]),
    ("host send", "host_send", &["host_send"]),
];

/// (result name, its measured segments) for every result with some.
pub fn measured(inputs: &[Input]) -> Vec<(&str, &[SegmentSummary])> {
    inputs
        .iter()
        .filter_map(|i| Some((i.name.as_str(), i.results()?.explain.as_ref()?.segments.as_slice())))
        .filter(|(_, s)| !s.is_empty())
        .collect()
}

/// What the measured results could not explain.
pub fn limitations(inputs: &[Input]) -> Vec<(&str, &str)> {
    let explained = inputs.iter().filter_map(|i| Some((i.name.as_str(), i.results()?.explain.as_ref()?)));
    explained
        .filter(|(_, e)| !e.segments.is_empty())
        .flat_map(|(n, e)| e.limitations.iter().map(move |l| (n, l.as_str())))
        .collect()
}

/// The mean of the first of `names` that a measurement has.
fn measured_mean(segments: &[SegmentSummary], names: &[&str]) -> Option<f64> {
    segments.iter().find(|s| names.contains(&s.name.as_str())).map(|s| s.mean_ns)
}

/// The grouped bars, when a result has measured segments.
pub fn figure(flows: &[(&str, &FlowResult)], measured: &[(&str, &[SegmentSummary])]) -> Option<Figure> {
    if measured.is_empty() {
        return None;
    }
    let simulated: Vec<_> = flows.iter().filter(|(_, f)| !f.segments_ns.is_empty()).collect();
    let mut series: Vec<String> = simulated.iter().map(|(n, f)| format!("{n} / {} (simulated)", f.name)).collect();
    series.extend(measured.iter().map(|(n, _)| format!("{n} (measured)")));
    let values = BESIDE
        .iter()
        .map(|(_, sim, real)| {
            let sims = simulated.iter().map(|(_, f)| f.segments_ns.get(*sim).and_then(Segment::mean));
            let reals = measured.iter().map(|(_, m)| measured_mean(m, real));
            sims.chain(reals).collect()
        })
        .collect();
    let chart = BarChart {
        kind: "segments-measured",
        title: "Segments: simulated and measured".into(),
        y_label: "mean latency".into(),
        y_fmt: fmt_ns,
        mode: BarMode::Grouped,
        categories: BESIDE.iter().map(|(label, _, _)| label.to_string()).collect(),
        series,
        values,
        reference: None,
        y_range: None,
    };
    Some(Figure {
        kind: "segments-measured",
        title: chart.title.clone(),
        caption: "Mean per segment. Simulated: NIC IRQ to VM entry, the guest, VM exit to the wire. Measured from the \
                  kernel's trace (measure net --explain): packet into the host stack to the server's wake-up, the \
                  server to its send syscall, to the response's net_dev_xmit."
            .into(),
        svg: chart.render(),
    })
}

/// Every measured segment of every result, in path order.
pub fn table(measured: &[(&str, &[SegmentSummary])]) -> Option<Table> {
    if measured.is_empty() {
        return None;
    }
    let mut t = Table::new(
        "Measured segments (measure net --explain)",
        &["result", "segment", "requests", "mean", "p99", "max"],
    );
    for (name, segments) in measured {
        for s in segments.iter() {
            t.row(vec![
                Cell::plain(*name),
                Cell::plain(s.name.clone()),
                Cell::plain(s.requests.to_string()),
                Cell::plain(fmt_ns(s.mean_ns)),
                Cell::plain(fmt_ns(s.p99_ns as f64)),
                Cell::plain(fmt_ns(s.max_ns as f64)),
            ]);
        }
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvirt_model::results::{ExplainSection, Results};

    fn input(name: &str, r: Results) -> Input {
        Input {
            name: name.into(),
            path: format!("{name}.json").into(),
            doc: crate::input::Document::Results(Box::new(r)),
            intervals: None,
        }
    }

    fn summary(name: &str, mean_ns: f64) -> SegmentSummary {
        SegmentSummary {
            name: name.into(),
            requests: 10,
            mean_ns,
            p99_ns: 2 * mean_ns as u64,
            max_ns: 3 * mean_ns as u64,
        }
    }

    #[test]
    fn measured_segments_are_drawn_beside_the_simulated_ones() {
        let mut sim = Results::new("netsim", 10);
        let mut flow = FlowResult { name: "rr".into(), ..Default::default() };
        for (k, v) in [("host_receive", 10_000), ("guest", 20_000), ("host_send", 5_000)] {
            flow.segments_ns.insert(k.into(), Segment::Mean(v.into()));
        }
        sim.flows.push(flow);
        let mut real = Results::new("net", 10);
        let names = ["send_lag", "client_send", "host_receive", "server", "host_send", "client_receive"];
        let segments = names.iter().zip(1..).map(|(n, i)| summary(n, 1_000.0 * i as f64)).collect();
        real.explain = Some(ExplainSection { segments, ..Default::default() });
        let inputs = [input("sim", sim), input("container", real)];
        let sec = super::super::network::section(&inputs).expect("a network section");
        let text = format!("{sec:?}");
        assert!(text.contains("Segments: simulated and measured"), "{text}");
        let m = measured(&inputs);
        let flows: Vec<(&str, &FlowResult)> = vec![("sim", &inputs[0].results().unwrap().flows[0])];
        let f = figure(&flows, &m).unwrap();
        assert!(f.svg.contains("sim / rr (simulated)") && f.svg.contains("container (measured)"), "{}", f.svg);
        let t = table(&m).unwrap();
        assert_eq!(t.rows.len(), 6);
        assert_eq!(t.rows[3][1].text, "server");
        assert!(figure(&flows, &[]).is_none(), "no measured segments, no figure");
    }

    #[test]
    fn a_server_in_a_guest_is_drawn_as_the_guest_segment_and_one_on_the_host_as_the_server() {
        let in_vm = [summary("host_receive", 1.0), summary("guest", 2.0), summary("host_send", 3.0)];
        let (_, _, guest_or_server) = BESIDE[1];
        assert_eq!(measured_mean(&in_vm, guest_or_server), Some(2.0));
        let in_container = [summary("host_receive", 1.0), summary("server", 5.0)];
        assert_eq!(measured_mean(&in_container, guest_or_server), Some(5.0));
        assert_eq!(measured_mean(&in_container, &["host_send"]), None);
    }
}
